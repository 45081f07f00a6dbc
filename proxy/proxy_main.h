// leash-proxy's process: flags, descriptor limit, the event loop thread, the resolver, the
// listener manager, and the PolicyStream subscriber that feeds it — everything main does,
// with the decision sink supplied by the caller (the binary passes
// leash::sidecar::AsyncDecisionLog; test builds may pass a synchronous writer). The flags are
// documented in proxy/main.cc.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/policystream/policy_subscriber.h"
#include "engine/decision_record.h"
#include "proxy/proxy_context.h"

namespace leash::proxy {

struct ProxyFlags {
  // --help: print the flags and exit.
  bool help = false;
  std::string admin_socket = "/run/leash/leash.sock";
  int decision_log_fd = -1;
  // The live decision stream's datagram socket (leashd's DecisionFeed); -1 for none.
  int decision_feed_fd = -1;
  // --port-sockets: the descriptors leashd handed down for the listeners (possibly none);
  // unset when the flag is absent and the proxy binds its own.
  std::optional<std::vector<int>> port_sockets;
  ProxyOptions options;
  int resolver_threads = 4;
  absl::Duration resolve_cache_ttl = absl::Seconds(30);
};

// Parses argv (after argv[0]) through leash::ParseCommandLine (absl flags). InvalidArgument
// names the flag and what it takes.
absl::StatusOr<ProxyFlags> ParseProxyFlags(int argc, char** argv);

// The flags' one-paragraph help.
std::string ProxyUsage();

// A sink writing to `fd` (taking ownership), and a count of records it lost (for heartbeats).
struct SinkHandle {
  std::unique_ptr<engine::DecisionSink> sink;
  std::function<uint64_t()> lost;
  // Applies each subject's logging.level from a new map (unset: every decision is written).
  std::function<void(const policystream::SubjectMap&)> apply_levels;
};
// `feed_fd`: the live stream's socket (taking ownership), or -1.
using SinkFactory = std::function<SinkHandle(int fd, int feed_fd)>;

// Runs the proxy until SIGTERM or SIGINT; returns the process exit code (exit_codes.h: 0
// stopped, 2 a bad flag, 4 a start that failed). Errors go to stderr.
int RunProxyMain(int argc, char** argv, const SinkFactory& make_sink);

}  // namespace leash::proxy
