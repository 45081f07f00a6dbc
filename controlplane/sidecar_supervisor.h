// leashd's supervision of its two sidecars (leash-proxy, leash-fswatch). It spawns each with
// the decision log's descriptor, respawns one that dies — it reconnects and gets the current
// map over PolicyStream, so chains and listeners are untouched — and kills one that stopped
// answering (a SIGSTOPped process stops its own watchdog too, so only a missed heartbeat can
// tell). More than 3 deaths of one sidecar in 10 minutes means something is wrong that a
// respawn will not fix: the supervisor gives up, and leashd stops the sidecars and holds
// (fswatch/README.md, "After leashd gives up").
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controlplane/clock.h"
#include "proto/policystream/policy_stream_service.h"
#include "leash/v1/control.pb.h"

namespace leash::controlplane {

// The descriptor number SidecarSpec::inherited_fds[index] has in a spawned sidecar.
int SidecarInheritedFd(size_t index);

struct SidecarSpec {
  // "leash-proxy" / "leash-fswatch".
  std::string name;
  leash::v1::SidecarKind kind = leash::v1::SIDECAR_KIND_UNSPECIFIED;
  // The program and its flags. "{log_fd}" in an argument is replaced by the descriptor number
  // the decision log has in the child.
  std::vector<std::string> argv;
  // The decision log (O_APPEND), inherited by the child; -1 for none.
  int decision_log_fd = -1;
  // Descriptors leashd keeps open for the sidecar's whole supervised life (for example a
  // kernel object that must outlive one process of it), handed to every spawn: the i-th is
  // number SidecarInheritedFd(i) in the child. "{fd:i}" in an argument is replaced by it.
  std::vector<int> inherited_fds;
  // A sidecar whose last heartbeat is older than this is killed (and respawned).
  absl::Duration heartbeat_timeout = absl::Seconds(5);
  // Non-empty: the sidecar runs with a hot standby (the watcher: a new process cannot be
  // started while nobody reads the fanotify group, since its own exec would wait for an answer).
  // A second process is spawned with these arguments appended once the first is connected;
  // "{ready_fd}" in them is the write end of a pipe on which it writes its pid (4 bytes) when
  // it is ready. When the running one dies (or is killed for silence), the ready standby is
  // sent `takeover_signal` and becomes the sidecar; a new standby follows once it is
  // connected. No process is spawned while neither runs: with no ready standby the supervisor
  // kills a standby still starting and gives up (leashd then reads the group itself, denying
  // every subject's event: fswatch/README.md, "After leashd gives up").
  std::vector<std::string> standby_args;
  int takeover_signal = 0;
  // With standby_args: the very first process is a standby too, handed the sidecar once it is
  // ready, right after `before_first_takeover` returns (on the monitor thread). For a group
  // that another reader reads meanwhile (leashd's holding reader, while a new leashd takes over
  // a group its predecessor's watchers held): two readers of one group must never overlap, and
  // the first watcher's own exec needs a reader to answer it.
  bool first_as_standby = false;
  std::function<void()> before_first_takeover;
  // Time a new process has to connect and say hello before it is treated as hung.
  absl::Duration startup_grace = absl::Seconds(15);
};

struct SupervisorPolicy {
  // Give up after more than `max_deaths` deaths within `window`.
  int max_deaths = 3;
  absl::Duration window = absl::Minutes(10);
  absl::Duration poll_period = absl::Milliseconds(100);
  // After a spawn that fails, the next try waits this long, doubling on each further failure
  // (1, 2, 4 s: a pids limit or a package upgrade a few seconds long is ridden out; one that
  // lasts is more than max_deaths and leashd gives up).
  absl::Duration respawn_backoff = absl::Seconds(1);
};

class SidecarSupervisor {
 public:
  // `give_up` is called (once, from the monitor thread) with the reason when a sidecar died too
  // often; leashd then stops the sidecars and holds, exiting only when stopped. `clock` times
  // the polls, backoffs, the death window, start-up grace and heartbeat silence; it outlives
  // the supervisor.
  SidecarSupervisor(policystream::PolicyStreamService* stream, SupervisorPolicy policy,
                    std::function<void(const std::string& reason)> give_up,
                    Clock& clock = Clock::Real());
  ~SidecarSupervisor();  // Stop()s

  // Spawns the sidecar and watches it from now on.
  absl::Status Start(SidecarSpec spec);

  // Gives the sidecar of that kind a new SidecarSpec (leash-proxy: port sockets leashd took
  // since it started) and restarts it on it: the running process is killed and respawned at
  // once, and that death is not counted against max_deaths. Not for a sidecar with a standby.
  // NotFound when that sidecar was never started.
  absl::Status Replace(SidecarSpec spec);

  // SIGTERM to every sidecar, then SIGKILL after `grace`; reaps them. No respawns after.
  void Stop(absl::Duration grace = absl::Seconds(3));

  std::vector<leash::v1::SidecarStatus> Status() const;
  // The current PID of a sidecar (0 when none), and of its ready standby (0 when none).
  pid_t PidOf(leash::v1::SidecarKind kind) const;
  pid_t ReadyStandbyOf(leash::v1::SidecarKind kind) const;

 private:
  struct Child {
    SidecarSpec spec;
    pid_t pid = 0;
    // The hot standby (spec.standby_args), and whether it said it is ready.
    pid_t standby_pid = 0;
    bool standby_ready = false;
    absl::Time standby_started;
    absl::Time next_standby = absl::InfinitePast();
    // The pipe standbys say they are ready on (read end non-blocking; both close-on-exec, the
    // write end handed to each standby).
    int ready_read = -1;
    int ready_write = -1;
    absl::Time started;
    // The last heartbeat stamp seen from the running process, and when (on clock_) it was
    // first seen: silence is measured on the supervisor's own clock, not against the stamp.
    absl::Time heartbeat_stamp = absl::InfinitePast();
    absl::Time heard_at;
    std::deque<absl::Time> deaths;
    // Died (or its respawn failed) and is to be spawned again, not before next_spawn.
    bool awaiting_respawn = false;
    absl::Time next_spawn = absl::InfinitePast();
    absl::Duration backoff = absl::ZeroDuration();  // after the last failed spawn
    uint32_t restarts = 0;
    // spec.first_as_standby, and no standby has been handed the sidecar yet.
    bool awaiting_first = false;
    // Killed by Replace: respawned at once, not counted as a death.
    bool replacing = false;
  };
  absl::StatusOr<pid_t> Spawn(const SidecarSpec& spec, int ready_write = -1);
  void Monitor();
  // One pass over a sidecar with a standby. Returns a reason to give up, or "". Sets
  // `spawn_standby` when a standby is to be spawned (outside the lock).
  std::string TendWithStandby(Child& child, absl::Time now, bool& spawn_standby)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the running process of `child` is to be killed as hung: connected, but no new
  // heartbeat for heartbeat_timeout; or not connected startup_grace after it started. Says
  // why in `why`.
  bool Silent(Child& child, absl::Time now, const char*& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  policystream::PolicyStreamService* const stream_;
  const SupervisorPolicy policy_;
  const std::function<void(const std::string&)> give_up_;
  Clock& clock_;
  std::thread monitor_;
  mutable absl::Mutex mu_;
  std::map<int, Child> children_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool gave_up_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace leash::controlplane
