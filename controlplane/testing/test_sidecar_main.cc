// A minimal sidecar for the supervisor's tests: subscribes to PolicyStream as the given kind,
// acks every map, heartbeats, and writes one line to the inherited decision-log descriptor.
//   test_sidecar --socket=<path> --kind=fswatch|proxy --log-fd=N [--exit-at-once]
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/time/clock.h"
#include "controlplane/sidecar_api/policy_subscriber.h"

int main(int argc, char** argv) {
  std::string socket, kind;
  int log_fd = -1;
  bool exit_at_once = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--socket=", 0) == 0) socket = arg.substr(9);
    if (arg.rfind("--kind=", 0) == 0) kind = arg.substr(7);
    if (arg.rfind("--log-fd=", 0) == 0) log_fd = std::stoi(arg.substr(9));
    if (arg == "--exit-at-once") exit_at_once = true;
  }
  if (log_fd >= 0) dprintf(log_fd, "{\"started\":%d}\n", getpid());
  if (exit_at_once) return 7;
  leash::sidecar::SubscriberOptions options;
  options.socket_path = socket;
  options.kind = kind == "proxy" ? leash::v1::SIDECAR_KIND_PROXY : leash::v1::SIDECAR_KIND_FSWATCH;
  options.heartbeat_period = absl::Milliseconds(50);
  leash::sidecar::PolicySubscriber subscriber(
      options, [](leash::sidecar::SubjectMapPtr, uint64_t) { return leash::v1::PolicyAck(); },
      nullptr);
  subscriber.Start();
  while (true) pause();
}
