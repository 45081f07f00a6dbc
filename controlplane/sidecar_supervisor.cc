#include "controlplane/sidecar_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

extern char** environ;

namespace leash::controlplane {
namespace {

// The decision log's number in a sidecar; inherited descriptors follow it.
constexpr int kChildLogFd = 3;

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
  return "stopped";
}

}  // namespace

int SidecarInheritedFd(size_t index) { return kChildLogFd + 1 + static_cast<int>(index); }

SidecarSupervisor::SidecarSupervisor(policystream::PolicyStreamService* stream, SupervisorPolicy policy,
                                     std::function<void(const std::string&)> give_up,
                                     Clock& clock)
    : stream_(stream), policy_(policy), give_up_(std::move(give_up)), clock_(clock) {
  monitor_ = std::thread([this] { Monitor(); });
}

SidecarSupervisor::~SidecarSupervisor() {
  Stop();
  if (monitor_.joinable()) monitor_.join();
}

absl::StatusOr<pid_t> SidecarSupervisor::Spawn(const SidecarSpec& spec, int ready_write) {
  // A standby's ready pipe follows the inherited descriptors.
  const int child_ready_fd = SidecarInheritedFd(spec.inherited_fds.size());
  std::vector<std::string> given = spec.argv;
  if (ready_write >= 0) {
    for (const std::string& arg : spec.standby_args) {
      given.push_back(absl::StrReplaceAll(arg, {{"{ready_fd}", std::to_string(child_ready_fd)}}));
    }
  }
  std::vector<std::string> args;
  for (const std::string& arg : given) {
    std::string expanded = absl::StrReplaceAll(arg, {{"{log_fd}", std::to_string(kChildLogFd)}});
    for (size_t i = 0; i < spec.inherited_fds.size(); ++i) {
      expanded = absl::StrReplaceAll(
          expanded, {{absl::StrCat("{fd:", i, "}"), std::to_string(SidecarInheritedFd(i))}});
    }
    args.push_back(std::move(expanded));
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto itself would keep close-on-exec, and a source number may be a target number of
  // another: every descriptor goes through a fresh one above all the targets first.
  std::vector<int> sources;
  auto close_sources = [&sources] {
    for (int fd : sources) close(fd);
  };
  auto hand_down = [&](int fd, int child_fd, absl::string_view what) -> absl::Status {
    const int source = fcntl(fd, F_DUPFD_CLOEXEC, child_ready_fd + 1);
    if (source < 0) return absl::ErrnoToStatus(errno, absl::StrCat("dup ", what, " for ", spec.name));
    sources.push_back(source);
    posix_spawn_file_actions_adddup2(&actions, source, child_fd);
    return absl::OkStatus();
  };
  absl::Status handed = absl::OkStatus();
  if (spec.decision_log_fd >= 0) handed = hand_down(spec.decision_log_fd, kChildLogFd, "the decision log");
  for (size_t i = 0; handed.ok() && i < spec.inherited_fds.size(); ++i) {
    handed = hand_down(spec.inherited_fds[i], SidecarInheritedFd(i),
                       absl::StrCat("inherited descriptor ", i));
  }
  if (handed.ok() && ready_write >= 0) {
    handed = hand_down(ready_write, child_ready_fd, "the standby's ready pipe");
  }
  if (!handed.ok()) {
    close_sources();
    posix_spawn_file_actions_destroy(&actions);
    return handed;
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // The child starts with no signals blocked or ignored, whatever leashd's threads do.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close_sources();
  if (rc != 0) {
    return absl::ErrnoToStatus(rc, absl::StrCat("spawn ", spec.name, " (", spec.argv[0], ")"));
  }
  return pid;
}

absl::Status SidecarSupervisor::Start(SidecarSpec spec) {
  int ready[2] = {-1, -1};
  if (!spec.standby_args.empty() && pipe2(ready, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("pipe for ", spec.name, "'s standby"));
  }
  const bool first_as_standby = spec.first_as_standby && !spec.standby_args.empty();
  absl::StatusOr<pid_t> pid = Spawn(spec, first_as_standby ? ready[1] : -1);
  if (!pid.ok()) {
    for (int fd : ready) {
      if (fd >= 0) close(fd);
    }
    return pid.status();
  }
  absl::MutexLock lock(&mu_);
  Child& child = children_[spec.kind];
  child.spec = std::move(spec);
  child.started = clock_.Now();
  if (first_as_standby) {
    child.standby_pid = *pid;
    child.standby_started = child.started;
    child.awaiting_first = true;
  } else {
    child.pid = *pid;
  }
  child.ready_read = ready[0];
  child.ready_write = ready[1];
  return absl::OkStatus();
}

absl::Status SidecarSupervisor::Replace(SidecarSpec spec) {
  absl::MutexLock lock(&mu_);
  auto it = children_.find(spec.kind);
  if (it == children_.end()) {
    return absl::NotFoundError(absl::StrCat(spec.name, " was never started: nothing to replace"));
  }
  if (!spec.standby_args.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(spec.name, " runs with a standby"));
  }
  Child& child = it->second;
  child.spec = std::move(spec);
  if (child.pid > 0) {
    child.replacing = true;
    kill(child.pid, SIGKILL);  // reaped and respawned on the monitor's next pass
  }
  return absl::OkStatus();
}

bool SidecarSupervisor::Silent(Child& child, absl::Time now, const char*& why) {
  const policystream::SidecarState state = stream_->State(child.spec.kind);
  if (state.pid != static_cast<uint32_t>(child.pid)) {
    why = "never connected to PolicyStream";
    return now - child.started > child.spec.startup_grace;
  }
  if (state.last_heartbeat != child.heartbeat_stamp) {
    child.heartbeat_stamp = state.last_heartbeat;
    child.heard_at = now;
  }
  why = "stopped sending heartbeats";
  return now - child.heard_at > child.spec.heartbeat_timeout;
}

std::string SidecarSupervisor::TendWithStandby(Child& child, absl::Time now,
                                               bool& spawn_standby) {
  const SidecarSpec& spec = child.spec;
  const char* name = spec.name.c_str();
  // Standbys that said they are ready.
  pid_t said = 0;
  while (read(child.ready_read, &said, sizeof(said)) == sizeof(said)) {
    if (said == child.standby_pid && said > 0 && !child.standby_ready) {
      child.standby_ready = true;
      std::fprintf(stderr, "leashd: %s standby (pid %d) ready\n", name, said);
    }
  }
  if (child.standby_pid > 0) {
    int status = 0;
    if (waitpid(child.standby_pid, &status, WNOHANG) == child.standby_pid) {
      std::fprintf(stderr, "leashd: %s standby (pid %d) %s\n", name, child.standby_pid,
                   DescribeExit(status).c_str());
      child.standby_pid = 0;
      child.standby_ready = false;
      child.deaths.push_back(now);
      child.next_standby = now + policy_.respawn_backoff;
    } else if (!child.standby_ready && now - child.standby_started > spec.startup_grace) {
      std::fprintf(stderr, "leashd: %s standby (pid %d) never said it is ready; killing it\n",
                   name, child.standby_pid);
      kill(child.standby_pid, SIGKILL);  // reaped on a later pass
    }
  }

  // The running one: gone, or silent (then killed here, and reaped before the standby is told:
  // the dead one must hold no descriptor of the group's events when the standby answers them).
  if (child.pid > 0) {
    int status = 0;
    pid_t done = waitpid(child.pid, &status, WNOHANG);
    if (done != child.pid) {
      const char* why = "";
      if (Silent(child, now, why)) {
        std::fprintf(stderr, "leashd: %s (pid %d) %s; killing it\n", name, child.pid, why);
        kill(child.pid, SIGKILL);  // ends a SIGSTOPped process too
        // Reaped at once: SIGKILL ends a process promptly (its waits on the group's events are
        // killable). Bounded, so a process stuck in an uninterruptible wait is retried next pass.
        for (int waited_ms = 0; waited_ms < 2000; ++waited_ms) {
          done = waitpid(child.pid, &status, WNOHANG);
          if (done == child.pid) break;
          absl::SleepFor(absl::Milliseconds(1));
        }
      }
    }
    if (done == child.pid) {
      std::fprintf(stderr, "leashd: %s (pid %d) %s\n", name, child.pid,
                   DescribeExit(status).c_str());
      child.pid = 0;
      child.deaths.push_back(now);
      child.awaiting_respawn = true;
    }
  }
  if (child.pid == 0 && child.awaiting_first) {
    // The first process is a standby: handed the sidecar once ready, after whoever reads the
    // group meanwhile has stopped. One that died or hung before it was ready (a death) is
    // spawned again here; the reader meanwhile goes on answering.
    if (child.standby_pid > 0 && child.standby_ready) {
      if (spec.before_first_takeover) spec.before_first_takeover();
      child.awaiting_first = false;
      kill(child.standby_pid, spec.takeover_signal);
      std::fprintf(stderr, "leashd: handed %s to its first watcher (pid %d)\n", name,
                   child.standby_pid);
      child.pid = child.standby_pid;
      child.started = now;
      child.standby_pid = 0;
      child.standby_ready = false;
      return "";
    }
    while (!child.deaths.empty() && now - child.deaths.front() > policy_.window) {
      child.deaths.pop_front();
    }
    if (static_cast<int>(child.deaths.size()) > policy_.max_deaths) {
      return absl::StrCat(spec.name, " died ", child.deaths.size(), " times in ",
                          absl::FormatDuration(policy_.window), " before it first read");
    }
    spawn_standby = child.standby_pid == 0 && now >= child.next_standby;
    return "";
  }
  if (child.pid == 0) {
    if (child.standby_pid > 0 && child.standby_ready) {
      kill(child.standby_pid, spec.takeover_signal);
      std::fprintf(stderr, "leashd: handed %s to its standby (pid %d)\n", name,
                   child.standby_pid);
      child.pid = child.standby_pid;
      child.started = now;
      child.standby_pid = 0;
      child.standby_ready = false;
      child.awaiting_respawn = false;
      ++child.restarts;
    } else {
      // Nothing reads the group now, and nothing can be started: its exec would wait for an
      // answer nobody gives. A standby still starting holds the group too (and may itself be
      // waiting on it): it goes, and leashd's holding reader reads the group from then on.
      if (child.standby_pid > 0) {
        kill(child.standby_pid, SIGKILL);
        for (int waited_ms = 0; waited_ms < 2000; ++waited_ms) {
          if (waitpid(child.standby_pid, nullptr, WNOHANG) == child.standby_pid) break;
          absl::SleepFor(absl::Milliseconds(1));
        }
        child.standby_pid = 0;
        child.standby_ready = false;
      }
      return absl::StrCat(spec.name, " is gone and no standby was ready to take over");
    }
  }
  while (!child.deaths.empty() && now - child.deaths.front() > policy_.window) {
    child.deaths.pop_front();
  }
  if (static_cast<int>(child.deaths.size()) > policy_.max_deaths) {
    return absl::StrCat(spec.name, " died ", child.deaths.size(), " times in ",
                        absl::FormatDuration(policy_.window));
  }
  // A new standby once the running one has a map in force, so that its exec and loading are
  // answered (an exec nobody answers would hold this thread in posix_spawn).
  if (child.standby_pid == 0 && now >= child.next_standby) {
    const policystream::SidecarState state = stream_->State(spec.kind);
    spawn_standby = state.connected && state.pid == static_cast<uint32_t>(child.pid) &&
                    state.acked_version > 0;
  }
  return "";
}

void SidecarSupervisor::Monitor() {
  while (true) {
    std::vector<std::pair<int, std::string>> respawn;
    std::vector<int> standbys;
    std::string give_up_reason;
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      clock_.AwaitWithDeadline(mu_, absl::Condition(&stop), clock_.Now() + policy_.poll_period);
      if (stopping_) return;
      const absl::Time now = clock_.Now();
      for (auto& [kind, child] : children_) {
        if (!child.spec.standby_args.empty()) {
          bool spawn_standby = false;
          std::string reason = TendWithStandby(child, now, spawn_standby);
          if (!reason.empty() && give_up_reason.empty()) {
            give_up_reason = absl::StrCat(reason, "; giving up on the sidecars");
          }
          if (spawn_standby) standbys.push_back(kind);
          continue;
        }
        if (child.pid > 0) {
          int status = 0;
          const pid_t done = waitpid(child.pid, &status, WNOHANG);
          if (done == child.pid) {
            std::fprintf(stderr, "leashd: %s (pid %d) %s\n", child.spec.name.c_str(), child.pid,
                         DescribeExit(status).c_str());
            child.pid = 0;
            if (child.replacing) {
              child.replacing = false;
              child.next_spawn = absl::InfinitePast();
            } else {
              child.deaths.push_back(now);
            }
            child.awaiting_respawn = true;
          } else {
            // Alive: is it answering? A SIGSTOPped process sends no heartbeats.
            const char* why = "";
            if (Silent(child, now, why)) {
              std::fprintf(stderr, "leashd: %s (pid %d) %s; killing it\n",
                           child.spec.name.c_str(), child.pid, why);
              kill(child.pid, SIGKILL);  // reaped, counted and respawned on the next pass
            }
            continue;
          }
        }
        // Dead, or a respawn that failed on an earlier pass (a failed spawn counts as a death
        // and is tried again here once its backoff is over, so a sidecar is never left down
        // without either coming back or leashd giving up).
        if (!child.awaiting_respawn || now < child.next_spawn) continue;
        while (!child.deaths.empty() && now - child.deaths.front() > policy_.window) {
          child.deaths.pop_front();
        }
        if (static_cast<int>(child.deaths.size()) > policy_.max_deaths) {
          give_up_reason = absl::StrCat(child.spec.name, " died ", child.deaths.size(),
                                        " times in ", absl::FormatDuration(policy_.window),
                                        "; giving up on the sidecars");
        } else {
          respawn.emplace_back(kind, child.spec.name);
        }
      }
      if (!give_up_reason.empty() && !gave_up_) {
        gave_up_ = true;
      } else {
        give_up_reason.clear();
      }
    }
    if (!give_up_reason.empty()) {
      std::fprintf(stderr, "leashd: %s\n", give_up_reason.c_str());
      if (give_up_) give_up_(give_up_reason);
      continue;
    }
    for (int kind : standbys) {
      SidecarSpec spec;
      int ready_write = -1;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
        spec = children_[kind].spec;
        ready_write = children_[kind].ready_write;
      }
      absl::StatusOr<pid_t> pid = Spawn(spec, ready_write);
      absl::MutexLock lock(&mu_);
      Child& child = children_[kind];
      if (!pid.ok()) {
        child.next_standby = clock_.Now() + policy_.respawn_backoff;
        std::fprintf(stderr, "leashd: spawning %s's standby failed: %s\n", spec.name.c_str(),
                     std::string(pid.status().message()).c_str());
        continue;
      }
      child.standby_pid = *pid;
      child.standby_ready = false;
      child.standby_started = clock_.Now();
    }
    for (const auto& [kind, name] : respawn) {
      SidecarSpec spec;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
        spec = children_[kind].spec;
      }
      absl::StatusOr<pid_t> pid = Spawn(spec);
      absl::MutexLock lock(&mu_);
      Child& child = children_[kind];
      if (!pid.ok()) {
        // Counted as a death; awaiting_respawn stays set, so a pass after the backoff tries
        // again or gives up.
        child.backoff = child.backoff == absl::ZeroDuration() ? policy_.respawn_backoff
                                                              : child.backoff * 2;
        child.next_spawn = clock_.Now() + child.backoff;
        std::fprintf(stderr, "leashd: respawning %s failed: %s; trying again in %s\n",
                     name.c_str(), std::string(pid.status().message()).c_str(),
                     absl::FormatDuration(child.backoff).c_str());
        child.deaths.push_back(clock_.Now());
        continue;
      }
      child.awaiting_respawn = false;
      child.backoff = absl::ZeroDuration();
      child.pid = *pid;
      child.started = clock_.Now();
      ++child.restarts;
      std::fprintf(stderr, "leashd: respawned %s (pid %d) from the current map\n", name.c_str(),
                   *pid);
    }
  }
}

void SidecarSupervisor::Stop(absl::Duration grace) {
  std::vector<pid_t> pids;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [kind, child] : children_) {
      if (child.pid > 0) pids.push_back(child.pid);
      if (child.standby_pid > 0) pids.push_back(child.standby_pid);
    }
  }
  if (monitor_.joinable()) monitor_.join();
  for (pid_t pid : pids) kill(pid, SIGTERM);
  // Real time, not clock_: this waits on processes the kernel ends.
  const absl::Time deadline = absl::Now() + grace;
  for (pid_t pid : pids) {
    while (waitpid(pid, nullptr, WNOHANG) == 0) {
      if (absl::Now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        break;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  absl::MutexLock lock(&mu_);
  for (auto& [kind, child] : children_) {
    child.pid = 0;
    child.standby_pid = 0;
    for (int* fd : {&child.ready_read, &child.ready_write}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
}

std::vector<leash::v1::SidecarStatus> SidecarSupervisor::Status() const {
  std::vector<leash::v1::SidecarStatus> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [kind, child] : children_) {
    leash::v1::SidecarStatus& status = out.emplace_back();
    status.set_name(child.spec.name);
    status.set_running(child.pid > 0);
    status.set_pid(static_cast<uint32_t>(child.pid));
    // Only what this very process acked on a live stream counts.
    const policystream::SidecarState state = stream_->State(child.spec.kind);
    const bool live = state.connected && state.pid == static_cast<uint32_t>(child.pid);
    status.set_acked_version(live ? state.acked_version : 0);
    status.set_restarts(child.restarts);
  }
  return out;
}

pid_t SidecarSupervisor::ReadyStandbyOf(leash::v1::SidecarKind kind) const {
  absl::MutexLock lock(&mu_);
  auto it = children_.find(kind);
  return it == children_.end() || !it->second.standby_ready ? 0 : it->second.standby_pid;
}

pid_t SidecarSupervisor::PidOf(leash::v1::SidecarKind kind) const {
  absl::MutexLock lock(&mu_);
  auto it = children_.find(kind);
  return it == children_.end() ? 0 : it->second.pid;
}

}  // namespace leash::controlplane
