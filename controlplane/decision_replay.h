// Reading the decision log file back for a watcher of the stream: from a start point (a ref,
// a time, or the last N matching lines) to the end of what is written now. The file is only
// read; the lines are the ones the writers wrote, so a replayed line and a live one are the
// same text.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controlplane/decision_filter.h"

namespace leash::controlplane {

struct ReplayStart {
  // The line with this ref and every line after it ...
  std::string ref;
  // ... or every line stamped at or after this ...
  std::optional<absl::Time> since;
  // ... or, with neither, the last `tail` matching lines.
  uint32_t tail = 0;
};

struct ReplayResult {
  uint64_t lines_read = 0;
  uint64_t emitted = 0;
  // False when `ref` was asked for and no line carries it (nothing was emitted).
  bool ref_found = true;
};

// Reads `path` and calls `emit` for every line from the start that `filter` matches, in file
// order. `account_of` names each record's account. `emit` returning false stops the replay
// (the watcher went away). Lines that are not records are skipped. Errors: the file cannot
// be opened (errno, with the path).
absl::StatusOr<ReplayResult> ReplayDecisionLog(
    const std::string& path, const ReplayStart& start, const DecisionFilter& filter,
    const std::function<std::string(uint32_t)>& account_of,
    const std::function<bool(const StreamedDecision&)>& emit);

}  // namespace leash::controlplane
