// Control.WatchDecisions, apart from gRPC: the replay from the decision log file from the
// watcher's start point, then (with follow) the live lines of the DecisionHub, each filtered,
// each told to `write`. A line that arrives live while the file is replayed is sent once.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "controlplane/decision_hub.h"
#include "leash/v1/control.pb.h"

namespace leash::controlplane {

// The most WatchDecisions calls leashd serves at once. Each holds one of the admin server's
// threads for as long as it runs (a follower: until the operator stops it), and the admin
// socket also carries `leash status`, every write and the sidecars' PolicyStream; one call
// more is refused (RESOURCE_EXHAUSTED, kTooManyWatchers) rather than served.
inline constexpr int kMaxDecisionWatchers = 8;

// The refusal's sentence, which `leash logs` prints as it is.
std::string TooManyWatchers();

struct WatchDecisionsDeps {
  // The live stream; null when leashd has none (replay only).
  DecisionHub* hub = nullptr;
  // The decision log file; empty when the log goes to leashd's stdout (nothing to replay).
  std::string log_path;
  // Names the account of a uid, for replayed lines (live ones are named by the hub).
  std::function<std::string(uint32_t)> account_of;
  // Whether an account name is one of leashd's subjects as account_of names them; unset: not
  // asked. A filter on an account that is none matches no line, which is said, not left silent.
  std::function<bool(const std::string&)> is_subject;
};

// Serves one watcher until the replay is done (without follow), its `until` has passed,
// `cancelled` says so, or `write` returns false (the watcher went away). Returns
// InvalidArgument for a filter that does not read; without follow, NotFound for a ref no line
// carries or an account that is no subject, and the file's error when it cannot be read (with
// follow these are notices and the live stream still follows).
absl::Status ServeWatchDecisions(const leash::v1::WatchDecisionsRequest& request,
                                 const WatchDecisionsDeps& deps,
                                 const std::function<bool()>& cancelled,
                                 const std::function<bool(const leash::v1::WatchDecisionsEvent&)>& write);

}  // namespace leash::controlplane
