// Reading a line of the decision log back into its record: the inverse of
// AppendDecisionLine (engine/decision_record.h). Pure: text in, record out.
//
// Two readers. The lines the writers' fast renderers produce (a flat object, one nested
// "subject", strings written as their bytes, no escapes, no findings) are read by hand in about
// a microsecond; any other line goes to protobuf's JSON parser, which reads every record but
// costs tens of microseconds a line. Both leashd's live stream (every line a sidecar sends) and
// `leash suggest` (millions of lines of a log) read through here.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "leash/v1/decision.pb.h"

namespace leash::engine {

// The record of one log line (without its '\n'). Fields this reader does not know are
// ignored, so a line written by a newer writer still reads. InvalidArgument for a line that is
// not a record.
absl::StatusOr<leash::v1::DecisionRecord> ReadDecisionLine(absl::string_view line);

}  // namespace leash::engine
