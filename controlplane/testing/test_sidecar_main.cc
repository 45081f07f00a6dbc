// A minimal sidecar for the supervisor's tests: subscribes to PolicyStream as the given kind,
// acks every map, heartbeats, and writes one line to the inherited decision-log descriptor.
//   test_sidecar --socket=<path> --kind=fswatch|proxy --log-fd=N [--exit-at-once]
//                [--standby [--ready-fd=N]]
// --standby: as leash-fswatch's standby, waits for SIGUSR1 before subscribing, and says it is
// ready by writing its pid to --ready-fd (left out: never ready).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/time/clock.h"
#include "proto/policystream/policy_subscriber.h"

int main(int argc, char** argv) {
  std::string socket, kind;
  int log_fd = -1;
  bool exit_at_once = false;
  bool standby = false;
  int ready_fd = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--socket=", 0) == 0) socket = arg.substr(9);
    if (arg.rfind("--kind=", 0) == 0) kind = arg.substr(7);
    if (arg.rfind("--log-fd=", 0) == 0) log_fd = std::stoi(arg.substr(9));
    if (arg == "--exit-at-once") exit_at_once = true;
    if (arg == "--standby") standby = true;
    if (arg.rfind("--ready-fd=", 0) == 0) ready_fd = std::stoi(arg.substr(11));
  }
  if (log_fd >= 0) dprintf(log_fd, "{\"started\":%d}\n", getpid());
  if (exit_at_once) return 7;
  if (standby) {
    sigset_t takeover;
    sigemptyset(&takeover);
    sigaddset(&takeover, SIGUSR1);
    sigprocmask(SIG_BLOCK, &takeover, nullptr);
    const pid_t pid = getpid();
    if (ready_fd >= 0 && write(ready_fd, &pid, sizeof(pid)) != sizeof(pid)) return 8;
    int signal_number = 0;
    sigwait(&takeover, &signal_number);
  }
  leash::policystream::SubscriberOptions options;
  options.socket_path = socket;
  options.kind = kind == "proxy" ? leash::v1::SIDECAR_KIND_PROXY : leash::v1::SIDECAR_KIND_FSWATCH;
  options.heartbeat_period = absl::Milliseconds(50);
  leash::policystream::PolicySubscriber subscriber(
      options, [](leash::policystream::SubjectMapPtr, uint64_t) { return leash::v1::PolicyAck(); },
      nullptr);
  subscriber.Start();
  while (true) pause();
}
