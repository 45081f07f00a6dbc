// leash-fswatch's process: flags, the refusals (kernel, capability), the order things start in
// (everything the event loop needs is made before the first mark goes on), and its exit codes,
// which leashd's supervisor reads. The map comes from leashd over PolicyStream
// (leash::sidecar::PolicySubscriber), or from a file in the test-only --initial-map start.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/exit_codes.h"

namespace leash::fswatch {

// Exit codes: the scheme of every Leash program (exit_codes.h). kExitOk: stopped on SIGTERM or
// SIGINT; kExitRefused: kernel < 5.0, no CAP_SYS_ADMIN, no fanotify; kExitStartFailed: no
// starting map, a bad descriptor; kExitWatchdog: the event loop stalled; kExitLoopFailed:
// reading the fanotify group failed.

inline constexpr int kWatchdogSeconds = 10;   // docs/ARCHITECTURE.md, rule F4
inline constexpr int kRescanSeconds = 5;      // docs/ARCHITECTURE.md, rule F5
// PolicyStream heartbeats: leashd hands the group to the standby watcher when they stop (a
// SIGSTOPped watcher stalls every open on the marked filesystems until then), so they come
// often enough for leashd's short timeout (controlplane/main/daemon.h) to tolerate a loaded host.
inline constexpr int kHeartbeatMillis = 250;

struct Flags {
  // --help: print the flags and exit.
  bool help = false;
  // leashd's admin socket (PolicyStream).
  std::string socket_path = "/run/leash/leash.sock";
  // Test-only start: the starting map from a file (a serialized leash.v1.PolicyUpdate)
  // instead of leashd. Requires mark_only_under.
  std::string initial_map;
  // Where decision records go; -1: stdout.
  int decision_log_fd = -1;
  // The live decision stream's datagram socket, handed over by leashd; -1 for none.
  int decision_feed_fd = -1;
  // Marks only filesystems mounted at or below this directory (tests: their tmpfs).
  std::string mark_only_under;
  // "best" (PIDFD_GET_INFO where the kernel has it) or "proc-status".
  std::string identity = "best";
  // Honour LEASH_FSWATCH_TEST_FAULT (test-only fault hooks; a flag of the testonly
  // leash-fswatch-with-test-faults alone).
  bool test_faults = false;
  // The fanotify group leashd made and keeps (sidecar::OpenPermissionGroup), and the pending
  // table shared by every watcher of it (sidecar::PendingTable); -1: the watcher makes a group
  // of its own (tests), which ends with it.
  int fanotify_fd = -1;
  int pending_table_fd = -1;
  // Start as the standby: everything made and loaded, but the group is not read until
  // sidecar::TakeOverSignal() arrives (leashd sends it once the reading watcher is dead). The
  // map is asked of leashd then (a --initial-map is read at start).
  bool standby = false;
  // With --standby: our pid (4 bytes) is written here once we wait for the signal.
  int ready_fd = -1;
};

// Parses argv[1..] (the absl flags above, through leash::ParseCommandLine). InvalidArgument
// naming the flag and the fix.
absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args);

// OK when `release` (uname -r) is Linux >= 5.0, which FAN_OPEN_EXEC_PERM needs.
absl::Status CheckKernelRelease(absl::string_view release);

std::string Usage();

// The whole process. Returns the exit code.
int FswatchMain(int argc, char** argv);

}  // namespace leash::fswatch
