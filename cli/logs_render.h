// `leash logs`: the request its flags make, and the one-line human form of a streamed
// decision (time, account, surface, action, what, reason, ref). Pure: no sockets.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/args.h"
#include "leash/v1/control.pb.h"

namespace leash::cli {

// The WatchDecisions request for `leash logs` flags. `now` anchors --since/--until given as a
// duration before now (10m, 2h). InvalidArgument names the flag that does not read.
absl::StatusOr<leash::v1::WatchDecisionsRequest> LogsRequest(const Args& args, absl::Time now);

// "<YYYY-MM-DD hh:mm:ss>  leash-iris  network  BLOCK  evil.example:443  <reason>  ref=<ref>".
// An audited would-be block reads "block (audit)"; an account leashd does not know reads
// "uid N". A notice reads "-- <notice>".
std::string HumanLine(const leash::v1::WatchDecisionsEvent& event);

}  // namespace leash::cli
