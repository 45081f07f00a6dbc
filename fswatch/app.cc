#include "fswatch/app.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
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
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/internal/sysinfo.h"
#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/command_line.h"
#include "proto/sidecar/decision_log.h"
#include "proto/policystream/policy_subscriber.h"
#include "fswatch/exec_facts.h"
#include "proto/sidecar/stop_signals.h"
#include "proto/sidecar/watcher_handover.h"
#include "engine/path_entry.h"
#include "fswatch/fanotify_linux.h"
#include "fswatch/marker.h"
#include "fswatch/mountinfo.h"
#include "fswatch/process_facts_linux.h"
#include "base/read_file.h"
#include "fswatch/subject_map.h"
#include "fswatch/watchdog.h"
#include "fswatch/watcher.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, socket, "/run/leash/leash.sock",
          "leashd's admin socket, where the map comes from (PolicyStream)");
ABSL_FLAG(std::string, initial_map, "",
          "tests: the starting map from this file (a serialized leash.v1.PolicyUpdate) instead "
          "of leashd; needs --mark-only-under");
ABSL_FLAG(int, decision_log_fd, -1, "the decision log's descriptor, handed over by leashd "
          "(-1: stdout)");
ABSL_FLAG(int, decision_feed_fd, -1, "leashd's end of the live decision stream: a datagram "
          "socket each logged batch is also sent on, never waiting (-1: none)");
ABSL_FLAG(std::string, mark_only_under, "",
          "marks only filesystems mounted at or below this directory (a test's tmpfs)");
ABSL_FLAG(std::string, identity, "best",
          "how an event's process is identified: best (PIDFD_GET_INFO where the kernel has it) "
          "or proc-status");
ABSL_FLAG(int, fanotify_fd, -1, "the fanotify group leashd keeps (-1: a group of our own)");
ABSL_FLAG(int, pending_table_fd, -1, "the pending table shared by the group's watchers");
ABSL_FLAG(bool, standby, false,
          "stand by: read the group only once leashd sends the takeover signal");
ABSL_FLAG(int, ready_fd, -1, "with --standby: our pid is written here once we stand by");
#ifdef LEASH_FSWATCH_TEST_FAULTS
ABSL_FLAG(bool, test_faults, false,
          "honour LEASH_FSWATCH_TEST_FAULT (this test build alone; with --initial-map)");
#endif

namespace leash::fswatch {
namespace {

#ifdef LEASH_FSWATCH_TEST_FAULTS
constexpr char kFaultEnv[] = "LEASH_FSWATCH_TEST_FAULT";
#endif
// The source name test/fixtures/tmpfs.h gives its mounts.
constexpr char kTestTmpfsSource[] = "leash-test";

// stderr, for the operator (the journal under leashd). Never called by the event loop.
void Say(const std::string& text) { dprintf(2, "leash-fswatch: %s\n", text.c_str()); }

absl::StatusOr<std::string> ReadProcFile(const char* path) { return base::ReadFile(path); }

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
  return "usage: leash-fswatch [--socket=PATH] [--decision-log-fd=N] [--decision-feed-fd=N]\n"
         "                     [--mark-only-under=DIR]\n"
         "                     [--identity=best|proc-status]\n"
         "                     [--fanotify-fd=N --pending-table-fd=N [--standby [--ready-fd=N]]]\n"
         "       leash-fswatch --initial-map=FILE --mark-only-under=TMPFS ...\n"
         "  Started by leashd, which hands it the UID -> policy map over PolicyStream (--socket,\n"
         "  default /run/leash/leash.sock) and the decision log as descriptor N (default:\n"
         "  stdout). --initial-map (tests) takes the map from a serialized leash.v1.PolicyUpdate\n"
         "  and requires --mark-only-under to name a tmpfs mount point. --fanotify-fd: the group\n"
         "  leashd keeps, with the pending table through which a watcher taking over answers\n"
         "  what its predecessor read; --standby waits for SIGUSR1 before reading it.\n"
         "  Exit codes (base/exit_codes.h): 0 stopped, 1 refused (kernel <\n"
         "  5.0, no CAP_SYS_ADMIN, no fanotify), 2 usage, 4 start failed, 5 watchdog fired,\n"
         "  6 event loop failed.\n";
}

absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args) {
  absl::StatusOr<base::CommandLine> line = base::ParseCommandLine(args);
  if (!line.ok()) return line.status();
  if (!line->positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", line->positional.front(), "'"));
  }
  Flags flags;
  flags.help = line->help;
  flags.socket_path = absl::GetFlag(FLAGS_socket);
  flags.initial_map = absl::GetFlag(FLAGS_initial_map);
  flags.decision_log_fd = absl::GetFlag(FLAGS_decision_log_fd);
  flags.decision_feed_fd = absl::GetFlag(FLAGS_decision_feed_fd);
  flags.identity = absl::GetFlag(FLAGS_identity);
  flags.fanotify_fd = absl::GetFlag(FLAGS_fanotify_fd);
  flags.pending_table_fd = absl::GetFlag(FLAGS_pending_table_fd);
  flags.ready_fd = absl::GetFlag(FLAGS_ready_fd);
  flags.standby = absl::GetFlag(FLAGS_standby);
#ifdef LEASH_FSWATCH_TEST_FAULTS
  flags.test_faults = absl::GetFlag(FLAGS_test_faults);
#endif
  if (flags.socket_path.empty()) {
    return absl::InvalidArgumentError("--socket needs a value: --socket=...");
  }
  // -1 is "not given" for every descriptor flag; anything else below 0 names no descriptor.
  for (const auto& [name, fd] : {std::pair{"--decision-log-fd", flags.decision_log_fd},
                                 std::pair{"--decision-feed-fd", flags.decision_feed_fd},
                                 std::pair{"--fanotify-fd", flags.fanotify_fd},
                                 std::pair{"--pending-table-fd", flags.pending_table_fd},
                                 std::pair{"--ready-fd", flags.ready_fd}}) {
    if (fd < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "=", fd, " is not a descriptor number (e.g. ", name, "=4)"));
    }
  }
  if (const std::string under = absl::GetFlag(FLAGS_mark_only_under); !under.empty()) {
    absl::StatusOr<std::string> normalized = engine::NormalizeAbsolutePath(under);
    if (!normalized.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mark-only-under=", under, " must be an absolute directory"));
    }
    if (*normalized == "/") {
      return absl::InvalidArgumentError(
          "--mark-only-under=/ confines nothing; name the directory (a test's tmpfs) to confine "
          "the marks to, or leave the flag out");
    }
    flags.mark_only_under = *normalized;
  }
  if (flags.identity != "best" && flags.identity != "proc-status") {
    return absl::InvalidArgumentError(
        absl::StrCat("--identity=", flags.identity, " is not one of best, proc-status"));
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

namespace {

// One leash-fswatch process, start to stop, in the order FswatchMain runs its steps. A step
// that cannot go on says why and returns the exit code (nullopt: go on).
class FswatchProcess {
 public:
  explicit FswatchProcess(Flags flags)
      : flags_(std::move(flags)), shared_group_(flags_.fanotify_fd >= 0) {}

  std::optional<int> Refusals();
  std::optional<int> ReadOptions();
  std::optional<int> LimitDescriptors();
  std::optional<int> OpenDecisionLog();
  std::optional<int> ReadInitialMap();
  void BlockSignals();
  std::optional<int> LoadBeforeMarks();
  std::optional<int> OpenGroup();
  void SayWhatIsJudged();
  void MakeWatcher();
  // Every start but a standby's: the loop runs before the first mark goes on.
  void StartReadingUnlessStandby();
  std::optional<int> ReceiveFirstMap();
  void StartRescan();
  int WaitForStop();
  void Shutdown();

 private:
  void StartLoop();
  void StopLoop();
  std::string AnswerAbandoned();
  void ReportMarks(const absl::StatusOr<MarkReport>& report, bool verbose);
  leash::v1::PolicyAck Apply(policystream::SubjectMapPtr map, uint64_t version);
  void Stats(leash::v1::Heartbeat& heartbeat);
  void Rescan();
  std::optional<int> StartFailed(const std::string& why) {
    Say(absl::StrCat("cannot start: ", why));
    return base::kExitStartFailed;
  }

  const Flags flags_;
  const bool shared_group_;
  // The acting process of each written file and exec line (read from /proc after the answer).
  const LinuxProcessFacts process_facts_;
  WatcherOptions options_;
  int log_fd_ = -1;
  int feed_fd_ = -1;
  policystream::SubjectMapPtr initial_map_;
  uint64_t initial_version_ = 0;
  sigset_t stop_signals_;
  std::unique_ptr<FanotifyLinux> group_;
  std::unique_ptr<sidecar::AsyncDecisionLog> log_;
  std::unique_ptr<Watcher> watcher_;
  std::unique_ptr<Marker> marker_;
  Loop loop_;
  std::unique_ptr<Watchdog> watchdog_;
  std::mutex apply_mu_;
  std::shared_ptr<grpc::Channel> warm_channel_;
  std::unique_ptr<policystream::PolicySubscriber> subscriber_;
  std::mutex rescan_mu_;
  std::condition_variable rescan_cv_;
  bool rescan_stop_ = false;
  std::thread rescan_;
};

// Refusals first, each saying what is missing.
std::optional<int> FswatchProcess::Refusals() {
  utsname uts{};
  uname(&uts);
  if (absl::Status kernel = CheckKernelRelease(uts.release); !kernel.ok()) {
    Say(absl::StrCat("refusing to start: ", kernel.message()));
    return base::kExitRefused;
  }
  if (!HasCapSysAdmin()) {
    Say("refusing to start: CAP_SYS_ADMIN is not in this process's effective set; fanotify "
        "permission events need it. Run leash-fswatch as root (leashd spawns it so)");
    return base::kExitRefused;
  }
  if (!flags_.initial_map.empty()) {
    if (absl::Status guard = CheckTestMountGuard(flags_.mark_only_under); !guard.ok()) {
      Say(absl::StrCat("refusing to start: ", guard.message()));
      return base::kExitUsage;
    }
  }
  return std::nullopt;
}

std::optional<int> FswatchProcess::ReadOptions() {
  options_.self_pid = getpid();
  options_.process_facts = &process_facts_;
  if (absl::StatusOr<std::string> hardlinks = ReadProcFile("/proc/sys/fs/protected_hardlinks");
      hardlinks.ok()) {
    options_.protected_hardlinks = !absl::StartsWith(*hardlinks, "0");
  }
#ifdef LEASH_FSWATCH_TEST_FAULTS
  if (const char* fault = getenv(kFaultEnv); fault != nullptr) {
    if (!flags_.test_faults) {
      Say(absl::StrCat(kFaultEnv, " is set and ignored (no --test-faults)"));
    } else if (std::string(fault) == "stall-loop") {
      options_.fault_stall_on_subject_event = true;
      Say("TEST FAULT: the event loop will stall at the first event of a mapped subject");
    } else {
      Say(absl::StrCat("unknown ", kFaultEnv, "=", fault, " (known: stall-loop)"));
      return base::kExitUsage;
    }
  }
#endif
  return std::nullopt;
}

// Each pending event holds a descriptor (two with the event's pidfd) until answered, and the
// pidfd cache keeps up to a quarter of the limit: raised before the group sizes the cache.
// On a shared group it is fixed at the pending table's size instead: every event descriptor
// this process is given is then a number the table has a slot for, and the one taking over
// after us can reach it.
std::optional<int> FswatchProcess::LimitDescriptors() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    const rlim_t want = shared_group_ ? sidecar::kWatcherDescriptorLimit : files.rlim_max;
    if (shared_group_ && files.rlim_max < want) {
      return StartFailed(absl::StrCat("RLIMIT_NOFILE's hard limit is ", files.rlim_max,
                                      "; a watcher of a shared group needs ", want));
    }
    files.rlim_cur = want;
    if (shared_group_) files.rlim_max = want;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0 && shared_group_) {
      return StartFailed(
          absl::StrCat("setrlimit(RLIMIT_NOFILE, ", want, "): ", strerror(errno)));
    }
  }
  constexpr int kLimit = static_cast<int>(sidecar::kWatcherDescriptorLimit);
  if (shared_group_ && (flags_.fanotify_fd >= kLimit || flags_.pending_table_fd >= kLimit)) {
    return StartFailed("the handed-over descriptors are above the watcher's descriptor limit");
  }
  return std::nullopt;
}

// The decision log's descriptor: handed over by leashd, or stdout.
std::optional<int> FswatchProcess::OpenDecisionLog() {
  const int given = flags_.decision_log_fd >= 0 ? flags_.decision_log_fd : 1;
  log_fd_ = fcntl(given, F_DUPFD_CLOEXEC, 3);
  if (log_fd_ < 0 || (fcntl(log_fd_, F_GETFL) & O_ACCMODE) == O_RDONLY) {
    return StartFailed(
        absl::StrCat("decision log descriptor ", given, " is not open for writing"));
  }
  if (flags_.decision_log_fd >= 0) close(flags_.decision_log_fd);
  if (flags_.decision_feed_fd >= 0) {
    // A descriptor that is not a socket is refused here rather than lost lines later.
    int type = 0;
    socklen_t length = sizeof(type);
    if (getsockopt(flags_.decision_feed_fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 ||
        type != SOCK_DGRAM) {
      return StartFailed(absl::StrCat("decision feed descriptor ", flags_.decision_feed_fd,
                                      " is not a datagram socket"));
    }
    feed_fd_ = fcntl(flags_.decision_feed_fd, F_DUPFD_CLOEXEC, 3);
    close(flags_.decision_feed_fd);
  }
  return std::nullopt;
}

std::optional<int> FswatchProcess::ReadInitialMap() {
  if (flags_.initial_map.empty()) return std::nullopt;
  absl::StatusOr<leash::v1::PolicyUpdate> update = ReadPolicyUpdateFile(flags_.initial_map);
  if (!update.ok()) return StartFailed(std::string(update.status().message()));
  absl::StatusOr<policystream::SubjectMapPtr> map = SubjectMapFromUpdate(*update);
  if (!map.ok()) {
    return StartFailed(absl::StrCat(flags_.initial_map, ": ", map.status().message()));
  }
  initial_map_ = *map;
  initial_version_ = update->version();
  return std::nullopt;
}

// Signals: handled by this thread only (every thread started below inherits the mask).
// SIGPIPE is ignored so a closed stderr or log pipe never kills the group's holder.
void FswatchProcess::BlockSignals() {
  signal(SIGPIPE, SIG_IGN);
  // The takeover signal is blocked in every thread from the start: one that arrives early is
  // kept pending for the standby's wait, and one sent to a watcher already reading does nothing.
  stop_signals_ = sidecar::BlockStopSignals({sidecar::TakeOverSignal()});
}

// Everything the loop and the watchdog will use, loaded now: the marks are not on yet.
// The CPU count is read from /sys (sysfs, which a whitelist subject's plan marks) the first
// time glibc's malloc makes a new arena and the first time an absl::Mutex spins: a fixed
// arena limit skips the one, an early call caches the other, so no thread of ours opens a
// file when it first allocates or contends (a standby's threads before its loop reads).
std::optional<int> FswatchProcess::LoadBeforeMarks() {
  mallopt(M_ARENA_MAX, 8);
  (void)absl::base_internal::NumCPUs();
  if (absl::Status prepared = Watchdog::Prepare(); !prepared.ok()) {
    return StartFailed(std::string(prepared.message()));
  }
  engine::Decision warm;
  warm.reason = "warm-up";
  leash::v1::Subject subject;
  subject.set_path("/");
  (void)engine::DecisionLine(engine::MakeDecisionRecord(
      absl::Now(), engine::MakeRef(1), 0, leash::v1::SURFACE_FILESYSTEM, warm, subject));
  return std::nullopt;
}

std::optional<int> FswatchProcess::OpenGroup() {
  const IdentityPreference preference = flags_.identity == "proc-status"
                                            ? IdentityPreference::kProcStatus
                                            : IdentityPreference::kBest;
  absl::StatusOr<std::unique_ptr<FanotifyLinux>> opened;
  if (shared_group_) {
    absl::StatusOr<sidecar::PendingTable*> table =
        sidecar::PendingTable::Map(flags_.pending_table_fd);
    if (!table.ok()) {
      return StartFailed(absl::StrCat("--pending-table-fd=", flags_.pending_table_fd, ": ",
                                      table.status().message()));
    }
    // Kept open under the number --pending-table-fd names, as the group is under
    // --fanotify-fd: a leashd started after this one's was killed takes both from us by those
    // numbers (controlplane/leftover_sidecars.h, TakeLeftoverGroup) before it stops us.
    opened = FanotifyLinux::Adopt(flags_.fanotify_fd, preference, *table);
  } else {
    opened = FanotifyLinux::Open(preference);
  }
  if (!opened.ok()) {
    Say(absl::StrCat("refusing to start: ", opened.status().message()));
    return absl::IsPermissionDenied(opened.status()) || absl::IsUnimplemented(opened.status())
               ? base::kExitRefused
               : base::kExitStartFailed;
  }
  group_ = *std::move(opened);
  return std::nullopt;
}

void FswatchProcess::SayWhatIsJudged() {
  Say(absl::StrCat("identity: ", IdentityMethodName(group_->identity_method()),
                   group_->identity_method() == IdentityMethod::kPidfdCache
                       ? absl::StrCat("; pidfds kept for up to ", group_->pidfd_cache_slots(),
                                      " processes")
                       : ""));
  // The ELF interpreter rule reads an agent's /proc/<pid>/stack: without it, an allowed
  // program's loader is judged as a command of its own (closed).
  bool own_stack = false;
  const int stack_error = LoadingElfInterpreter(getpid(), own_stack);
  Say(stack_error == 0 && HasCapability(CAP_SYS_PTRACE) && HasCapability(CAP_DAC_READ_SEARCH)
          ? "ELF interpreters: an allowed program's loader is allowed as part of its exec "
            "(the file PT_INTERP names from the host's root, root-controlled; one thread, "
            "/proc/<pid>/stack in load_elf_binary)"
          : absl::StrCat("ELF interpreters: NOT recognized (/proc/<pid>/stack: ",
                         stack_error == 0 ? "readable" : strerror(stack_error),
                         "; CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH are needed for other "
                         "accounts' processes): a dynamic program's loader is judged as a "
                         "command of its own, so a commands whitelist must list it"));
  Say(group_->mount_check() == MountCheck::kStatmount
          ? "mounts of other namespaces: detected (statx STATX_MNT_ID_UNIQUE + statmount); a "
            "subject's open through one is judged under its fail_mode"
          : "mounts of other namespaces: NOT detected (kernel < 6.8 has no statmount); paths "
            "are judged as the kernel reports them");
  Say("subject = the acting process's real UID (a setuid program the agent runs stays the "
      "agent's)");
  Say(group_->reports_open_errors()
          ? "an open whose file the kernel cannot open for the watcher: denied by the kernel, "
            "logged under the opener's UID (FAN_REPORT_FD_ERROR)"
          : "an open whose file the kernel cannot open for the watcher: denied by the kernel, "
            "logged without an opener (kernel < 6.13 has no FAN_REPORT_FD_ERROR; such an event "
            "later in a batch is not seen at all)");
  if (!flags_.mark_only_under.empty()) {
    Say(absl::StrCat("marks confined to filesystems mounted under ", flags_.mark_only_under));
  }
}

void FswatchProcess::MakeWatcher() {
  log_ = std::make_unique<sidecar::AsyncDecisionLog>(log_fd_, 8192, sidecar::DecisionLineGate::Limits(),
                                                     leash::v1::SURFACE_FILESYSTEM);
  if (feed_fd_ >= 0) log_->AttachFeed(std::exchange(feed_fd_, -1));
  watcher_ = std::make_unique<Watcher>(*group_, *log_, options_);
  marker_ = std::make_unique<Marker>(
      *group_, [] { return ReadProcFile("/proc/self/mountinfo"); },
      MarkOptions{flags_.mark_only_under});
}

void FswatchProcess::StartLoop() {
  watcher_->StartPassClock();
  loop_.thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "fsw-loop");
    loop_.tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    while (!loop_.stop.load(std::memory_order_relaxed)) {
      const int rc = watcher_->RunOnce(1000);
      if (rc < 0) {
        loop_.failed_errno.store(-rc);
        break;
      }
    }
    loop_.done.store(true);
  });
  while (loop_.tid.load() == 0) std::this_thread::yield();
  watchdog_ = std::make_unique<Watchdog>([w = watcher_.get()] { return w->last_pass_ns(); },
                                         loop_.tid.load(), kWatchdogSeconds, base::kExitWatchdog);
}

void FswatchProcess::StopLoop() {
  if (!loop_.thread.joinable()) return;
  loop_.StopAndJoin();
  watchdog_.reset();
}

std::string FswatchProcess::AnswerAbandoned() {
  const int64_t started_ns = absl::GetCurrentTimeNanos();
  const AbandonedCounts abandoned = group_->AnswerAbandoned(
      [&](uint64_t noted) { return watcher_->JudgeAbandoned(noted); },
      [&](uint64_t noted, bool allowed) { watcher_->LogAbandoned(noted, allowed); });
  return absl::StrCat(abandoned.answered,
                      " event(s) left unanswered by the previous watcher answered (",
                      abandoned.every_number
                          ? "it died inside a read, so every descriptor number was tried"
                          : absl::StrCat(abandoned.numbers_tried, " noted number(s) tried"),
                      ") in ", (absl::GetCurrentTimeNanos() - started_ns) / 1000, " us");
}

// The loop runs before the first mark goes on, so an event on a marked filesystem never finds
// nobody to answer it (and no thread of ours, starting gRPC or reading /sys, waits on our own
// group). That is every start but a standby's: a group of our own is new, and so is the group
// leashd hands its first watcher (were it not, what a predecessor left is answered first,
// with no map yet: denied). A standby's group is marked and may hold events its predecessor
// read: its loop waits until the map is in force and those are answered (meanwhile new
// events queue in the kernel, unanswered, never allowed).
void FswatchProcess::StartReadingUnlessStandby() {
  if (flags_.standby) return;
  if (shared_group_) Say(absl::StrCat("reading the group: ", AnswerAbandoned()));
  StartLoop();
}

void FswatchProcess::ReportMarks(const absl::StatusOr<MarkReport>& report, bool verbose) {
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
        absl::Now(), engine::MakeRef(RandomBits()), kUnknownUid, leash::v1::SURFACE_FILESYSTEM,
        decision, leash::v1::Subject());
    record.set_severity("critical");
    log_->Record(std::move(record));
  }
}

// The map in force first, then the marks it needs; the ack after both.
leash::v1::PolicyAck FswatchProcess::Apply(policystream::SubjectMapPtr map, uint64_t version) {
  std::lock_guard<std::mutex> lock(apply_mu_);
  std::vector<std::pair<uint32_t, std::string>> accounts;
  for (const auto& [uid, entry] : *map) {
    log_->SetLevel(uid, sidecar::LevelOf(entry.policy.get()));
    accounts.emplace_back(uid, entry.account);
  }
  log_->SetAccounts(accounts);
  watcher_->Publish(map, version);
  absl::StatusOr<MarkReport> report = marker_->Reconcile(*map);
  ReportMarks(report, /*verbose=*/true);
  leash::v1::PolicyAck ack;
  ack.set_version(version);
  if (!report.ok()) {
    ack.set_error(absl::StrCat("map in force but marks unchanged: ", report.status().message()));
  } else if (!report->problems.empty()) {
    ack.set_error(
        absl::StrCat("filesystems not watched: ", absl::StrJoin(report->problems, "; ")));
  }
  Say(absl::StrCat("map version ", version, " in force: ", map->size(), " subject(s), ",
                   marker_->marked().size(), " filesystem(s) marked"));
  return ack;
}

void FswatchProcess::Stats(leash::v1::Heartbeat& heartbeat) {
  heartbeat.set_events(watcher_->events_answered());
  heartbeat.set_records_lost(log_->lost());
  heartbeat.set_queue_overflows(watcher_->overflows());
  watcher_->would_be_blocks().Fill(heartbeat.mutable_would_be_blocks());
}

// The map: leashd's over PolicyStream (applied and acked on the subscriber's thread, with
// heartbeats carrying the counters), or the test-only file. A standby waits for the takeover
// first, and reads the group only once the map is in force.
std::optional<int> FswatchProcess::ReceiveFirstMap() {
  if (flags_.standby) {
    if (initial_map_ == nullptr) warm_channel_ = WarmUpPolicyStream(flags_.socket_path);
    if (!WaitForTakeOver(stop_signals_, flags_.ready_fd)) {
      Say("stopped while standing by; the group was never read by this process");
      return base::kExitOk;
    }
  }
  if (initial_map_ != nullptr) {
    Apply(initial_map_, initial_version_);
  } else {
    policystream::SubscriberOptions subscriber_options;
    subscriber_options.socket_path = flags_.socket_path;
    subscriber_options.kind = leash::v1::SIDECAR_KIND_FSWATCH;
    subscriber_options.heartbeat_period = absl::Milliseconds(kHeartbeatMillis);
    subscriber_ = std::make_unique<policystream::PolicySubscriber>(
        subscriber_options,
        [this](policystream::SubjectMapPtr map, uint64_t version) { return Apply(map, version); },
        [this](leash::v1::Heartbeat& heartbeat) { Stats(heartbeat); });
    subscriber_->Start();
    if (absl::Status first = subscriber_->WaitForFirstMap(absl::Seconds(30)); !first.ok()) {
      subscriber_->Stop();
      StopLoop();
      return StartFailed(absl::StrCat("no map from leashd at ", flags_.socket_path, ": ",
                                      first.message()));
    }
  }
  if (flags_.standby) {
    // Before our first read: our own event descriptors would take numbers the predecessor's
    // unanswered events still hold in the kernel's list.
    const std::string answered = AnswerAbandoned();
    StartLoop();
    Say(absl::StrCat("reading the group: ", answered));
  }
  return std::nullopt;
}

// Re-scan every 5 s: filesystems mounted (or unmounted) since are marked (or forgotten).
void FswatchProcess::StartRescan() {
  rescan_ = std::thread([this] { Rescan(); });
}

void FswatchProcess::Rescan() {
  pthread_setname_np(pthread_self(), "fsw-rescan");
  std::unique_lock<std::mutex> lock(rescan_mu_);
  while (!rescan_cv_.wait_for(lock, std::chrono::seconds(kRescanSeconds),
                              [&] { return rescan_stop_; })) {
    lock.unlock();
    {
      std::lock_guard<std::mutex> apply_lock(apply_mu_);
      if (policystream::SubjectMapPtr map = watcher_->map(); map != nullptr) {
        ReportMarks(marker_->Reconcile(*map), /*verbose=*/false);
      }
    }
    lock.lock();
  }
}

// Until a stop signal, or the event loop fails. Returns the exit code.
int FswatchProcess::WaitForStop() {
  for (;;) {
    // Woken each second to see whether the event loop failed.
    if (const std::optional<int> stop = sidecar::WaitForStopSignal(
            stop_signals_, absl::Seconds(1),
            [this] { Say("SIGHUP ignored (maps arrive over PolicyStream)"); })) {
      Say(absl::StrCat("stopping on signal ", *stop));
      return base::kExitOk;
    }
    if (const int error = loop_.failed_errno.load(); error != 0) {
      Say(error == EMFILE
              ? absl::StrCat("no event has had a descriptor for ",
                             absl::FormatDuration(WatcherOptions().descriptor_starvation_limit),
                             " (EMFILE: the watcher's descriptor table is full, and the kernel "
                             "denies every open meanwhile); exiting so leashd respawns the "
                             "watcher with a fresh one")
              : absl::StrCat("the event loop failed reading the fanotify group (errno ", error,
                             "); exiting so leashd respawns the watcher"));
      return base::kExitLoopFailed;
    }
  }
}

// No new maps, no re-scan, then the loop stopped while the watchdog still watches it (a loop
// stuck in a pass when SIGTERM came is dumped and exits in 10 s, as at any other time), then
// the watchdog off and the group closed (every pending event is answered allow by the kernel).
void FswatchProcess::Shutdown() {
  if (subscriber_ != nullptr) subscriber_->Stop();
  {
    std::lock_guard<std::mutex> lock(rescan_mu_);
    rescan_stop_ = true;
  }
  rescan_cv_.notify_all();
  if (rescan_.joinable()) rescan_.join();
  StopLoop();
  group_.reset();
  Say(absl::StrCat("stopped: ", watcher_->events_answered(), " events answered, ", log_->lost(),
                   " records lost, ", watcher_->overflows(), " queue overflows, ",
                   watcher_->unopenable(), " events the kernel could not open for the watcher, ",
                   watcher_->audited_blocks(), " blocks let through under audit"));
  log_.reset();
}

}  // namespace

int FswatchMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<Flags> parsed = ParseFlags(args);
  if (!parsed.ok()) {
    Say(absl::StrCat(parsed.status().message(), "; `leash-fswatch --help` lists the flags"));
    return base::kExitUsage;
  }
  if (parsed->help) {
    dprintf(1, "%s", base::FlagsHelp(Usage()).c_str());
    return base::kExitOk;
  }
  // Heap-allocated: the process outlives nothing, and its threads reach it until Shutdown.
  auto process = std::make_unique<FswatchProcess>(*std::move(parsed));
  // Before the first mark, in this order: nothing the loop needs is loaded after.
  for (auto step : {&FswatchProcess::Refusals, &FswatchProcess::ReadOptions,
                    &FswatchProcess::LimitDescriptors, &FswatchProcess::OpenDecisionLog,
                    &FswatchProcess::ReadInitialMap}) {
    if (std::optional<int> exit_code = ((*process).*step)()) return *exit_code;
  }
  process->BlockSignals();
  for (auto step : {&FswatchProcess::LoadBeforeMarks, &FswatchProcess::OpenGroup}) {
    if (std::optional<int> exit_code = ((*process).*step)()) return *exit_code;
  }
  process->SayWhatIsJudged();
  process->MakeWatcher();
  process->StartReadingUnlessStandby();
  if (std::optional<int> exit_code = process->ReceiveFirstMap()) return *exit_code;
  process->StartRescan();
  const int exit_code = process->WaitForStop();
  process->Shutdown();
  return exit_code;
}

}  // namespace leash::fswatch
