// Which decisions a watcher of the stream asked for (Control.WatchDecisions): by account,
// surface, action, whether enforced, and a time bound; and reading a log line back into its
// record. Pure: no files, no locks.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "leash/v1/control.pb.h"
#include "leash/v1/decision.pb.h"

namespace leash::controlplane {

// One decision as it travels the stream: the log's line (no newline), its record, and the
// account its uid belongs to ("" when leashd knows none).
struct StreamedDecision {
  std::string line;
  leash::v1::DecisionRecord record;
  std::string account;
};

struct DecisionFilter {
  std::string account;
  std::string surface;
  std::string action;
  std::optional<bool> enforced;
  // Records stamped after this do not match.
  std::optional<absl::Time> until;

  // Whether `decision` is one the watcher asked for. A record whose ts does not read is kept
  // by the time bound (it is still a decision the watcher may need).
  bool Matches(const StreamedDecision& decision) const;
};

// The filter a request asks for. InvalidArgument names a field that does not read (an unknown
// surface or action, a time that is not RFC 3339).
absl::StatusOr<DecisionFilter> FilterFromRequest(const leash::v1::WatchDecisionsRequest& request);

// An RFC 3339 time as the log writes it ("2026-01-02T03:04:05.000006Z") or with any offset.
absl::StatusOr<absl::Time> ParseDecisionTime(absl::string_view text);

// The record of one log line (without its '\n'). Unknown fields are ignored, so a newer
// writer's line still reads. InvalidArgument for a line that is not a record.
absl::StatusOr<leash::v1::DecisionRecord> ParseDecisionLine(absl::string_view line);

}  // namespace leash::controlplane
