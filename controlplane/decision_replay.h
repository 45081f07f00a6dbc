// Reading the decision log file back for a watcher of the stream: from a start point (a ref,
// a time, or the last N matching lines) to the end of what is written now, across logrotate's
// rotations of it (base/rotated_log.h: `<log>.1`, the compressed `<log>.2.gz` and older), so a
// start point that falls before the last rotation is replayed from the rotated file, then on
// into the log, each line once and in order. The files are only read; the lines are the ones
// the writers wrote, so a replayed line and a live one are the same text.
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

// Reads `path` and its rotations and calls `emit` for every line from the start that `filter`
// matches, oldest first. A ref is looked for from the newest file back; a time starts at the
// newest file whose first line is older than it; the tail reads back as many files as it
// needs. `account_of` names each record's account. `emit` returning false stops the replay
// (the watcher went away). Lines that are not records are skipped. Errors: NotFound when
// neither the file nor a rotation exists; a file that cannot be read, or a compressed one that
// is damaged (naming it).
absl::StatusOr<ReplayResult> ReplayDecisionLog(
    const std::string& path, const ReplayStart& start, const DecisionFilter& filter,
    const std::function<std::string(uint32_t)>& account_of,
    const std::function<bool(const StreamedDecision&)>& emit);

}  // namespace leash::controlplane
