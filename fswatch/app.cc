#include "fswatch/app.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/internal/sysinfo.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "proto/sidecar/decision_log.h"
#include "proto/policystream/policy_subscriber.h"
#include "fswatch/exec_facts.h"
#include "proto/sidecar/watcher_handover.h"
#include "engine/path_entry.h"
#include "fswatch/fanotify_linux.h"
#include "fswatch/marker.h"
#include "fswatch/mountinfo.h"
#include "base/read_file.h"
#include "fswatch/subject_map.h"
#include "fswatch/watchdog.h"
#include "fswatch/watcher.h"
#include "grpcpp/grpcpp.h"

namespace leash::fswatch {
namespace {

constexpr char kFaultEnv[] = "LEASH_FSWATCH_TEST_FAULT";
// The source name test/fixtures/tmpfs.h gives its mounts.
constexpr char kTestTmpfsSource[] = "leash-test";

// stderr, for the operator (the journal under leashd). Never called by the event loop.
void Say(const std::string& text) { dprintf(2, "leash-fswatch: %s\n", text.c_str()); }

absl::StatusOr<std::string> ReadProcFile(const char* path) { return ReadWholeFile(path); }

uint64_t RandomBits() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) {
    bits = static_cast<uint64_t>(absl::GetCurrentTimeNanos()) * 0x9e3779b97f4a7c15ULL;
  }
  return bits;
}

bool HasCapability(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[capability / 32].effective & (1u << (capability % 32))) != 0;
}

bool HasCapSysAdmin() { return HasCapability(CAP_SYS_ADMIN); }

// The test-only guard: a start from --initial-map marks only a tmpfs the test mounted.
absl::Status CheckTestMountGuard(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadProcFile("/proc/self/mountinfo");
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<MountEntry>> mounts = ParseMountInfo(*text);
  if (!mounts.ok()) return mounts.status();
  for (const MountEntry& mount : *mounts) {
    if (mount.mount_point == dir && mount.fstype == "tmpfs" && mount.source == kTestTmpfsSource) {
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "--mark-only-under=", dir, " is not the mount point of a tmpfs mounted for a test (type "
      "tmpfs, source '", kTestTmpfsSource, "', as test/fixtures/tmpfs.h mounts it); a test-only "
      "start (--initial-map) never marks a real filesystem"));
}

// Makes gRPC load and start what it needs (its threads, the resolver, the socket's
// connection) while the standby can still open files: after the takeover nothing reads the
// group until the map has come, and an open of ours on a marked filesystem would wait for
// ourselves. The channel is kept for the process's life: with none left gRPC shuts down, and
// starting again reads /sys (the CPU count).
std::shared_ptr<grpc::Channel> WarmUpPolicyStream(const std::string& socket_path) {
  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
      absl::StrCat("unix:", socket_path), grpc::InsecureChannelCredentials());
  channel->WaitForConnected(gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_seconds(5, GPR_TIMESPAN)));
  return channel;
}

// The standby's wait: says it is ready (our pid on `ready_fd`, and on stderr), then waits for
// sidecar::TakeOverSignal(). Returns false when a stop signal comes first.
bool WaitForTakeOver(const sigset_t& stop_signals, int ready_fd) {
  sigset_t wait_for = stop_signals;
  sigaddset(&wait_for, sidecar::TakeOverSignal());
  Say("standing by: the group is not read until leashd hands it over");
  if (ready_fd >= 0) {
    const pid_t pid = getpid();
    if (write(ready_fd, &pid, sizeof(pid)) != sizeof(pid)) {
      Say(absl::StrCat("could not tell leashd we stand by (--ready-fd=", ready_fd,
                       "): ", strerror(errno)));
    }
    close(ready_fd);
  }
  for (;;) {
    const int signal_number = sigwaitinfo(&wait_for, nullptr);
    if (signal_number == sidecar::TakeOverSignal()) {
      Say("taking over the group");
      return true;
    }
    if (signal_number == SIGHUP || signal_number < 0) continue;
    return false;
  }
}

struct Loop {
  std::atomic<bool> stop{false};
  std::atomic<pid_t> tid{0};
  std::atomic<int> failed_errno{0};
  std::atomic<bool> done{false};
  std::thread thread;

  // Stops the loop, which may be parked in a blocking read: the kick signal ends that read.
  void StopAndJoin() {
    stop.store(true);
    while (!done.load()) {
      syscall(SYS_tgkill, getpid(), tid.load(), Watchdog::KickSignal());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    thread.join();
  }
};

}  // namespace

std::string Usage() {
  return "usage: leash-fswatch [--socket=PATH] [--decision-log-fd=N] [--mark-only-under=DIR]\n"
         "                     [--identity=best|proc-status]\n"
         "                     [--fanotify-fd=N --pending-table-fd=N [--standby [--ready-fd=N]]]\n"
         "       leash-fswatch --initial-map=FILE --mark-only-under=TMPFS [--test-faults] ...\n"
         "  Started by leashd, which hands it the UID -> policy map over PolicyStream (--socket,\n"
         "  default /run/leash/leash.sock) and the decision log as descriptor N (default:\n"
         "  stdout). --initial-map (tests) takes the map from a serialized leash.v1.PolicyUpdate\n"
         "  and requires --mark-only-under to name a tmpfs mount point. --fanotify-fd: the group\n"
         "  leashd keeps, with the pending table through which a watcher taking over answers\n"
         "  what its predecessor read; --standby waits for SIGUSR1 before reading it.\n"
         "  Exit codes: 0 stopped, 2 usage, 3 refused (kernel < 5.0, no CAP_SYS_ADMIN, no\n"
         "  fanotify), 4 start failed, 5 watchdog fired, 6 event loop failed.\n";
}

absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args) {
  Flags flags;
  for (const std::string& arg : args) {
    std::pair<std::string, std::string> kv = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const std::string& name = kv.first;
    const std::string& value = kv.second;
    const bool has_value = absl::StrContains(arg, '=');
    auto need_value = [&]() -> absl::Status {
      if (!has_value || value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value: ", name, "=..."));
      }
      return absl::OkStatus();
    };
    if (name == "--socket") {
      if (absl::Status s = need_value(); !s.ok()) return s;
      flags.socket_path = value;
    } else if (name == "--initial-map") {
      if (absl::Status s = need_value(); !s.ok()) return s;
      flags.initial_map = value;
    } else if (name == "--decision-log-fd") {
      if (absl::Status s = need_value(); !s.ok()) return s;
      if (!absl::SimpleAtoi(value, &flags.decision_log_fd) || flags.decision_log_fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--decision-log-fd=", value, " is not a descriptor number (e.g. --decision-log-fd=3)"));
      }
    } else if (name == "--mark-only-under") {
      if (absl::Status s = need_value(); !s.ok()) return s;
      absl::StatusOr<std::string> normalized = engine::NormalizeAbsolutePath(value);
      if (!normalized.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--mark-only-under=", value, " must be an absolute directory"));
      }
      if (*normalized == "/") {
        return absl::InvalidArgumentError(
            "--mark-only-under=/ confines nothing; name the directory (a test's tmpfs) to confine "
            "the marks to, or leave the flag out");
      }
      flags.mark_only_under = *normalized;
    } else if (name == "--identity") {
      if (value != "best" && value != "proc-status") {
        return absl::InvalidArgumentError(
            absl::StrCat("--identity=", value, " is not one of best, proc-status"));
      }
      flags.identity = value;
    } else if (name == "--fanotify-fd" || name == "--pending-table-fd" || name == "--ready-fd") {
      if (absl::Status s = need_value(); !s.ok()) return s;
      int& target = name == "--fanotify-fd"       ? flags.fanotify_fd
                    : name == "--pending-table-fd" ? flags.pending_table_fd
                                                   : flags.ready_fd;
      if (!absl::SimpleAtoi(value, &target) || target < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "=", value, " is not a descriptor number (e.g. ", name, "=4)"));
      }
    } else if (name == "--standby" && !has_value) {
      flags.standby = true;
    } else if (name == "--test-faults" && !has_value) {
      flags.test_faults = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    }
  }
  if (!flags.initial_map.empty() && flags.mark_only_under.empty()) {
    return absl::InvalidArgumentError(
        "--initial-map is a test-only start and needs --mark-only-under=<the test's tmpfs>, so "
        "a test never marks a real filesystem");
  }
  if ((flags.fanotify_fd >= 0) != (flags.pending_table_fd >= 0)) {
    return absl::InvalidArgumentError(
        "--fanotify-fd and --pending-table-fd go together: a watcher of a shared group notes "
        "what it has read where its successor finds it");
  }
  if (flags.standby && flags.fanotify_fd < 0) {
    return absl::InvalidArgumentError(
        "--standby needs --fanotify-fd: a standby takes over a group someone else keeps");
  }
  if (flags.ready_fd >= 0 && !flags.standby) {
    return absl::InvalidArgumentError("--ready-fd is only written by a --standby watcher");
  }
  if (flags.test_faults && flags.initial_map.empty()) {
    return absl::InvalidArgumentError("--test-faults is only honoured with --initial-map");
  }
  return flags;
}

absl::Status CheckKernelRelease(absl::string_view release) {
  std::vector<absl::string_view> parts = absl::StrSplit(release, absl::MaxSplits('.', 2));
  int major = 0, minor = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &major)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot read the kernel version from '", release, "'; leash-fswatch needs Linux >= 5.0"));
  }
  absl::string_view minor_text = parts[1];
  size_t digits = 0;
  while (digits < minor_text.size() && absl::ascii_isdigit(minor_text[digits])) ++digits;
  if (!absl::SimpleAtoi(minor_text.substr(0, digits), &minor)) minor = 0;
  if (major < 5) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this kernel is ", release,
        "; leash-fswatch needs Linux >= 5.0 (FAN_OPEN_EXEC_PERM, which judges commands). "
        "Filesystem and command enforcement is off on this host"));
  }
  return absl::OkStatus();
}

int FswatchMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<Flags> parsed = ParseFlags(args);
  if (!parsed.ok()) {
    Say(std::string(parsed.status().message()));
    dprintf(2, "%s", Usage().c_str());
    return kExitUsage;
  }
  const Flags flags = *parsed;

  // Refusals first, each saying what is missing.
  utsname uts{};
  uname(&uts);
  if (absl::Status kernel = CheckKernelRelease(uts.release); !kernel.ok()) {
    Say(absl::StrCat("refusing to start: ", kernel.message()));
    return kExitRefused;
  }
  if (!HasCapSysAdmin()) {
    Say("refusing to start: CAP_SYS_ADMIN is not in this process's effective set; fanotify "
        "permission events need it. Run leash-fswatch as root (leashd spawns it so)");
    return kExitRefused;
  }
  if (!flags.initial_map.empty()) {
    if (absl::Status guard = CheckTestMountGuard(flags.mark_only_under); !guard.ok()) {
      Say(absl::StrCat("refusing to start: ", guard.message()));
      return kExitUsage;
    }
  }

  WatcherOptions options;
  options.self_pid = getpid();
  if (absl::StatusOr<std::string> hardlinks = ReadProcFile("/proc/sys/fs/protected_hardlinks");
      hardlinks.ok()) {
    options.protected_hardlinks = !absl::StartsWith(*hardlinks, "0");
  }
  if (const char* fault = getenv(kFaultEnv); fault != nullptr) {
    if (!flags.test_faults) {
      Say(absl::StrCat(kFaultEnv, " is set and ignored (no --test-faults)"));
    } else if (std::string(fault) == "stall-loop") {
      options.fault_stall_on_subject_event = true;
      Say("TEST FAULT: the event loop will stall at the first event of a mapped subject");
    } else {
      Say(absl::StrCat("unknown ", kFaultEnv, "=", fault, " (known: stall-loop)"));
      return kExitUsage;
    }
  }

  // Each pending event holds a descriptor (two with the event's pidfd) until answered, and the
  // pidfd cache keeps up to a quarter of the limit: raised before the group sizes the cache.
  // On a shared group it is fixed at the pending table's size instead: every event descriptor
  // this process is given is then a number the table has a slot for, and the one taking over
  // after us can reach it.
  const bool shared_group = flags.fanotify_fd >= 0;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    const rlim_t want = shared_group ? sidecar::kWatcherDescriptorLimit : files.rlim_max;
    if (shared_group && files.rlim_max < want) {
      Say(absl::StrCat("cannot start: RLIMIT_NOFILE's hard limit is ", files.rlim_max,
                       "; a watcher of a shared group needs ", want));
      return kExitStartFailed;
    }
    files.rlim_cur = want;
    if (shared_group) files.rlim_max = want;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0 && shared_group) {
      Say(absl::StrCat("cannot start: setrlimit(RLIMIT_NOFILE, ", want, "): ", strerror(errno)));
      return kExitStartFailed;
    }
  }
  if (shared_group && (flags.fanotify_fd >= static_cast<int>(sidecar::kWatcherDescriptorLimit) ||
                       flags.pending_table_fd >= static_cast<int>(sidecar::kWatcherDescriptorLimit))) {
    Say("cannot start: the handed-over descriptors are above the watcher's descriptor limit");
    return kExitStartFailed;
  }

  // The decision log's descriptor: handed over by leashd, or stdout.
  const int log_fd = flags.decision_log_fd >= 0
                         ? fcntl(flags.decision_log_fd, F_DUPFD_CLOEXEC, 3)
                         : fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (log_fd < 0 || (fcntl(log_fd, F_GETFL) & O_ACCMODE) == O_RDONLY) {
    Say(absl::StrCat("cannot start: decision log descriptor ",
                     flags.decision_log_fd >= 0 ? flags.decision_log_fd : 1,
                     " is not open for writing"));
    return kExitStartFailed;
  }
  if (flags.decision_log_fd >= 0) close(flags.decision_log_fd);

  sidecar::SubjectMapPtr initial_map;
  uint64_t initial_version = 0;
  if (!flags.initial_map.empty()) {
    absl::StatusOr<leash::v1::PolicyUpdate> update = ReadPolicyUpdateFile(flags.initial_map);
    if (!update.ok()) {
      Say(absl::StrCat("cannot start: ", update.status().message()));
      return kExitStartFailed;
    }
    absl::StatusOr<sidecar::SubjectMapPtr> map = SubjectMapFromUpdate(*update);
    if (!map.ok()) {
      Say(absl::StrCat("cannot start: ", flags.initial_map, ": ", map.status().message()));
      return kExitStartFailed;
    }
    initial_map = *map;
    initial_version = update->version();
  }

  // Signals: handled by this thread only (every thread started below inherits the mask).
  // SIGPIPE is ignored so a closed stderr or log pipe never kills the group's holder.
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  // The takeover signal is blocked in every thread from the start: one that arrives early is
  // kept pending for the standby's wait, and one sent to a watcher already reading does nothing.
  sigset_t blocked = stop_signals;
  sigaddset(&blocked, sidecar::TakeOverSignal());
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);

  // Everything the loop and the watchdog will use, loaded now: the marks are not on yet.
  // The CPU count is read from /sys (sysfs, which a whitelist subject's plan marks) the first
  // time glibc's malloc makes a new arena and the first time an absl::Mutex spins: a fixed
  // arena limit skips the one, an early call caches the other, so no thread of ours opens a
  // file when it first allocates or contends (a standby's threads before its loop reads).
  mallopt(M_ARENA_MAX, 8);
  (void)absl::base_internal::NumCPUs();
  if (absl::Status prepared = Watchdog::Prepare(); !prepared.ok()) {
    Say(absl::StrCat("cannot start: ", prepared.message()));
    return kExitStartFailed;
  }
  {
    engine::Decision warm;
    warm.reason = "warm-up";
    leash::v1::Subject subject;
    subject.set_path("/");
    (void)engine::DecisionLine(engine::MakeDecisionRecord(
        absl::Now(), engine::MakeRef(1), 0, leash::v1::SURFACE_FILESYSTEM, warm, subject));
  }

  const IdentityPreference preference =
      flags.identity == "proc-status" ? IdentityPreference::kProcStatus : IdentityPreference::kBest;
  absl::StatusOr<std::unique_ptr<FanotifyLinux>> opened;
  if (shared_group) {
    absl::StatusOr<sidecar::PendingTable*> table =
        sidecar::PendingTable::Map(flags.pending_table_fd);
    if (!table.ok()) {
      Say(absl::StrCat("cannot start: --pending-table-fd=", flags.pending_table_fd, ": ",
                       table.status().message()));
      return kExitStartFailed;
    }
    close(flags.pending_table_fd);  // the mapping stays
    opened = FanotifyLinux::Adopt(flags.fanotify_fd, preference, *table);
  } else {
    opened = FanotifyLinux::Open(preference);
  }
  if (!opened.ok()) {
    Say(absl::StrCat("refusing to start: ", opened.status().message()));
    return absl::IsPermissionDenied(opened.status()) || absl::IsUnimplemented(opened.status())
               ? kExitRefused
               : kExitStartFailed;
  }
  std::unique_ptr<FanotifyLinux> group = *std::move(opened);
  Say(absl::StrCat("identity: ", IdentityMethodName(group->identity_method()),
                   group->identity_method() == IdentityMethod::kPidfdCache
                       ? absl::StrCat("; pidfds kept for up to ", group->pidfd_cache_slots(),
                                      " processes")
                       : ""));
  // The ELF interpreter rule reads an agent's /proc/<pid>/stack: without it, an allowed
  // program's loader is judged as a command of its own (closed).
  bool own_stack = false;
  const int stack_error = LoadingElfInterpreter(getpid(), own_stack);
  Say(stack_error == 0 && HasCapability(CAP_SYS_PTRACE) && HasCapability(CAP_DAC_READ_SEARCH)
          ? "ELF interpreters: an allowed program's loader is allowed as part of its exec "
            "(PT_INTERP, one thread, /proc/<pid>/stack in load_elf_binary)"
          : absl::StrCat("ELF interpreters: NOT recognized (/proc/<pid>/stack: ",
                         stack_error == 0 ? "readable" : strerror(stack_error),
                         "; CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH are needed for other "
                         "accounts' processes): a dynamic program's loader is judged as a "
                         "command of its own, so a commands whitelist must list it"));
  Say(group->mount_check() == MountCheck::kStatmount
          ? "mounts of other namespaces: detected (statx STATX_MNT_ID_UNIQUE + statmount); a "
            "subject's open through one is judged under its fail_mode"
          : "mounts of other namespaces: NOT detected (kernel < 6.8 has no statmount); paths "
            "are judged as the kernel reports them");
  Say("subject = the acting process's real UID (a setuid program the agent runs stays the "
      "agent's)");
  Say(group->reports_open_errors()
          ? "an open whose file the kernel cannot open for the watcher: denied by the kernel, "
            "logged under the opener's UID (FAN_REPORT_FD_ERROR)"
          : "an open whose file the kernel cannot open for the watcher: denied by the kernel, "
            "logged without an opener (kernel < 6.13 has no FAN_REPORT_FD_ERROR; such an event "
            "later in a batch is not seen at all)");
  if (!flags.mark_only_under.empty()) {
    Say(absl::StrCat("marks confined to filesystems mounted under ", flags.mark_only_under));
  }

  auto log = std::make_unique<sidecar::AsyncDecisionLog>(log_fd);
  sidecar::AsyncDecisionLog* const log_ptr = log.get();
  auto watcher = std::make_unique<Watcher>(*group, *log, options);
  auto marker = std::make_unique<Marker>(
      *group, [] { return ReadProcFile("/proc/self/mountinfo"); },
      MarkOptions{flags.mark_only_under});

  Loop loop;
  std::unique_ptr<Watchdog> watchdog;
  auto start_loop = [&] {
    loop.thread = std::thread([&] {
      pthread_setname_np(pthread_self(), "fsw-loop");
      loop.tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
      while (!loop.stop.load(std::memory_order_relaxed)) {
        const int rc = watcher->RunOnce(1000);
        if (rc < 0) {
          loop.failed_errno.store(-rc);
          break;
        }
      }
      loop.done.store(true);
    });
    while (loop.tid.load() == 0) std::this_thread::yield();
    watchdog = std::make_unique<Watchdog>([w = watcher.get()] { return w->last_pass_ns(); },
                                          loop.tid.load(), kWatchdogSeconds, kExitWatchdog);
  };
  auto stop_loop = [&] {
    if (!loop.thread.joinable()) return;
    loop.StopAndJoin();
    watchdog.reset();
  };
  auto answer_abandoned = [&] {
    const int64_t started_ns = absl::GetCurrentTimeNanos();
    const AbandonedCounts abandoned = group->AnswerAbandoned(
        [&](uint64_t noted) { return watcher->JudgeAbandoned(noted); },
        [&](uint64_t noted, bool allowed) { watcher->LogAbandoned(noted, allowed); });
    return absl::StrCat(abandoned.answered,
                        " event(s) left unanswered by the previous watcher answered (",
                        abandoned.every_number
                            ? "it died inside a read, so every descriptor number was tried"
                            : absl::StrCat(abandoned.numbers_tried, " noted number(s) tried"),
                        ") in ", (absl::GetCurrentTimeNanos() - started_ns) / 1000, " us");
  };
  // The loop runs before the first mark goes on, so an event on a marked filesystem never finds
  // nobody to answer it (and no thread of ours, starting gRPC or reading /sys, waits on our own
  // group). That is every start but a standby's: a group of our own is new, and so is the group
  // leashd hands its first watcher (were it not, what a predecessor left is answered first,
  // with no map yet: denied). A standby's group is marked and may hold events its predecessor
  // read: its loop waits until the map is in force and those are answered (meanwhile new
  // events queue in the kernel, unanswered, never allowed).
  if (!flags.standby) {
    if (shared_group) Say(absl::StrCat("reading the group: ", answer_abandoned()));
    start_loop();
  }

  auto report_marks = [&](const absl::StatusOr<MarkReport>& report, bool verbose) {
    if (!report.ok()) {
      Say(absl::StrCat("marks unchanged: ", report.status().message()));
      return;
    }
    for (const std::string& added : report->added) Say(absl::StrCat("marked ", added));
    for (const std::string& removed : report->removed) Say(absl::StrCat("unmarked ", removed));
    if (verbose) {
      for (const std::string& excluded : report->excluded) {
        Say(absl::StrCat("not marked (by design): ", excluded));
      }
    }
    for (const std::string& problem : verbose ? report->problems : report->new_problems) {
      Say(absl::StrCat("NOT WATCHED: ", problem));
    }
    for (const std::string& problem : report->new_problems) {
      engine::Decision decision;
      decision.verdict = engine::Verdict::kAllow;
      decision.reason = absl::StrCat("filesystem not watched: ", problem);
      leash::v1::DecisionRecord record = engine::MakeDecisionRecord(
          absl::Now(), engine::MakeRef(RandomBits()),
          kUnknownUid, leash::v1::SURFACE_FILESYSTEM, decision, leash::v1::Subject());
      record.set_severity("critical");
      log->Record(std::move(record));
    }
  };

  // Apply: the map in force first, then the marks it needs; the ack after both.
  std::mutex apply_mu;
  auto apply = [&](sidecar::SubjectMapPtr map, uint64_t version) {
    std::lock_guard<std::mutex> lock(apply_mu);
    for (const auto& [uid, entry] : *map) {
      log_ptr->SetLevel(uid, sidecar::LevelOf(entry.policy.get()));
    }
    watcher->Publish(map, version);
    absl::StatusOr<MarkReport> report = marker->Reconcile(*map);
    report_marks(report, /*verbose=*/true);
    leash::v1::PolicyAck ack;
    ack.set_version(version);
    if (!report.ok()) {
      ack.set_error(absl::StrCat("map in force but marks unchanged: ", report.status().message()));
    } else if (!report->problems.empty()) {
      ack.set_error(absl::StrCat("filesystems not watched: ",
                                 absl::StrJoin(report->problems, "; ")));
    }
    Say(absl::StrCat("map version ", version, " in force: ", map->size(), " subject(s), ",
                     marker->marked().size(), " filesystem(s) marked"));
    return ack;
  };
  auto stats = [&](leash::v1::Heartbeat& heartbeat) {
    heartbeat.set_events(watcher->events_answered());
    heartbeat.set_records_lost(log->lost());
    heartbeat.set_queue_overflows(watcher->overflows());
  };

  // The map: leashd's over PolicyStream (applied and acked on the subscriber's thread, with
  // heartbeats carrying the counters), or the test-only file.
  std::shared_ptr<grpc::Channel> warm_channel;
  if (flags.standby) {
    if (initial_map == nullptr) warm_channel = WarmUpPolicyStream(flags.socket_path);
    if (!WaitForTakeOver(stop_signals, flags.ready_fd)) {
      Say("stopped while standing by; the group was never read by this process");
      return kExitStopped;
    }
  }

  std::unique_ptr<sidecar::PolicySubscriber> subscriber;
  if (initial_map != nullptr) {
    apply(initial_map, initial_version);
  } else {
    sidecar::SubscriberOptions subscriber_options;
    subscriber_options.socket_path = flags.socket_path;
    subscriber_options.kind = leash::v1::SIDECAR_KIND_FSWATCH;
    subscriber_options.heartbeat_period = absl::Milliseconds(kHeartbeatMillis);
    subscriber = std::make_unique<sidecar::PolicySubscriber>(subscriber_options, apply, stats);
    subscriber->Start();
    if (absl::Status first = subscriber->WaitForFirstMap(absl::Seconds(30)); !first.ok()) {
      Say(absl::StrCat("cannot start: no map from leashd at ", flags.socket_path, ": ",
                       first.message()));
      subscriber->Stop();
      stop_loop();
      return kExitStartFailed;
    }
  }
  if (flags.standby) {
    // Before our first read: our own event descriptors would take numbers the predecessor's
    // unanswered events still hold in the kernel's list.
    const std::string answered = answer_abandoned();
    start_loop();
    Say(absl::StrCat("reading the group: ", answered));
  }

  // Re-scan every 5 s: filesystems mounted (or unmounted) since are marked (or forgotten).
  std::mutex rescan_mu;
  std::condition_variable rescan_cv;
  bool rescan_stop = false;
  std::thread rescan([&] {
    pthread_setname_np(pthread_self(), "fsw-rescan");
    std::unique_lock<std::mutex> lock(rescan_mu);
    while (!rescan_cv.wait_for(lock, std::chrono::seconds(kRescanSeconds),
                               [&] { return rescan_stop; })) {
      lock.unlock();
      {
        std::lock_guard<std::mutex> apply_lock(apply_mu);
        if (sidecar::SubjectMapPtr map = watcher->map(); map != nullptr) {
          report_marks(marker->Reconcile(*map), /*verbose=*/false);
        }
      }
      lock.lock();
    }
  });

  int exit_code = kExitStopped;
  for (;;) {
    const timespec tick{1, 0};
    const int signal_number = sigtimedwait(&stop_signals, nullptr, &tick);
    if (signal_number == SIGHUP) {
      // A cgroup-wide SIGHUP meant for leashd must not stop enforcement; maps arrive over
      // PolicyStream, not by signal.
      Say("SIGHUP ignored (maps arrive over PolicyStream)");
      continue;
    }
    if (signal_number > 0) {
      Say(absl::StrCat("stopping on signal ", signal_number));
      break;
    }
    if (const int error = loop.failed_errno.load(); error != 0) {
      Say(error == EMFILE
              ? absl::StrCat("no event has had a descriptor for ",
                             absl::FormatDuration(WatcherOptions().descriptor_starvation_limit),
                             " (EMFILE: the watcher's descriptor table is full, and the kernel "
                             "denies every open meanwhile); exiting so leashd respawns the "
                             "watcher with a fresh one")
              : absl::StrCat("the event loop failed reading the fanotify group (errno ", error,
                             "); exiting so leashd respawns the watcher"));
      exit_code = kExitLoopFailed;
      break;
    }
  }

  // Shutdown: no new maps, no re-scan, then the loop stopped while the watchdog still watches
  // it (a loop stuck in a pass when SIGTERM came is dumped and exits in 10 s, as at any other
  // time), then the watchdog off and the group closed (every pending event is answered allow by
  // the kernel).
  if (subscriber != nullptr) subscriber->Stop();
  {
    std::lock_guard<std::mutex> lock(rescan_mu);
    rescan_stop = true;
  }
  rescan_cv.notify_all();
  rescan.join();
  stop_loop();
  group.reset();
  Say(absl::StrCat("stopped: ", watcher->events_answered(), " events answered, ", log->lost(),
                   " records lost, ", watcher->overflows(), " queue overflows, ",
                   watcher->unopenable(), " events the kernel could not open for the watcher"));
  log.reset();
  return exit_code;
}

}  // namespace leash::fswatch
