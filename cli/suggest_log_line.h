// One line of the decision log, read back for `leash suggest`: the record as leashd's writers
// render it (engine/decision_record.h) plus `enforced`, which an audited surface writes as
// false on a would-be block. Pure: text in, record out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "leash/v1/decision.pb.h"

namespace leash::cli {

struct LoggedDecision {
  leash::v1::DecisionRecord record;
  // False only when the line says `"enforced":false`: the block was logged and not made
  // (audit). A line without the field was enforced as its action says.
  bool enforced = true;
};

// Parses one line (without its '\n'). Fields this reader does not know are ignored, so a log
// written by a newer leashd still reads. InvalidArgument for a line that is not a JSON object.
absl::StatusOr<LoggedDecision> ParseLoggedDecision(absl::string_view line);

// The top-level "uid" of a line without parsing it: the writers put it among the first keys,
// and a key's quotes cannot appear unescaped inside a JSON string, so the first `"uid":` is
// the record's own. 0 when absent (proto3 JSON leaves a zero out); nullopt when the number
// after it does not read. A cheap filter only: a line it keeps is parsed in full.
std::optional<uint32_t> PeekUid(absl::string_view line);

// The top-level "ts" text, found the same way; empty when absent.
absl::string_view PeekTs(absl::string_view line);

}  // namespace leash::cli
