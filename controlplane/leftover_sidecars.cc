#include "controlplane/leftover_sidecars.h"

#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/atomic_file.h"
#include "base/read_file.h"

namespace leash::controlplane {
namespace {

constexpr long kSysPidfdOpen = 434;          // Linux >= 5.3
constexpr long kSysPidfdSendSignal = 424;    // Linux >= 5.1
constexpr long kSysPidfdGetfd = 438;         // Linux >= 5.6

int PidfdSignal(int pidfd, int signal) {
  return syscall(kSysPidfdSendSignal, pidfd, signal, nullptr, 0) == 0 ? 0 : errno;
}

// Waits up to `timeout_ms` for the process to end (a pidfd reads as ready when it has).
bool WaitForExit(int pidfd, int timeout_ms) {
  pollfd p{pidfd, POLLIN, 0};
  for (;;) {
    const int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

std::string NameOf(absl::string_view cmdline) {
  const absl::string_view argv0 = cmdline.substr(0, cmdline.find('\0'));
  const size_t slash = argv0.rfind('/');
  return std::string(slash == absl::string_view::npos ? argv0 : argv0.substr(slash + 1));
}

// A process found to be a leftover sidecar, held by a pidfd.
struct Leftover {
  int pidfd;
  pid_t pid;
  std::string name;
  std::string cmdline;
};

// Whether `pid` runs as root from the binary `cmdline` names: a command line is the process's
// own to write (exec -a), so it alone would let any account have leashd stop its processes,
// or stall leashd's start on ones that ignore SIGTERM.
bool RunsAsRootFrom(pid_t pid, absl::string_view cmdline) {
  struct stat st;
  if (stat(absl::StrCat("/proc/", pid).c_str(), &st) != 0 || st.st_uid != 0) return false;
  char exe[PATH_MAX];
  const ssize_t n = readlink(absl::StrCat("/proc/", pid, "/exe").c_str(), exe, sizeof(exe) - 1);
  if (n <= 0) return false;
  absl::string_view running(exe, static_cast<size_t>(n));
  // A binary replaced by an upgrade since the process started.
  absl::ConsumeSuffix(&running, " (deleted)");
  char resolved[PATH_MAX];
  const std::string argv0(cmdline.substr(0, cmdline.find('\0')));
  if (realpath(argv0.c_str(), resolved) == nullptr) return false;
  return running == resolved;
}

// Stops them all: SIGTERM to each, one wait for all, then SIGKILL to any still there.
void StopAll(const std::vector<Leftover>& found, std::vector<std::string>& lines) {
  std::vector<bool> ended(found.size(), false);
  for (size_t i = 0; i < found.size(); ++i) {
    if (PidfdSignal(found[i].pidfd, SIGTERM) == ESRCH) ended[i] = true;
  }
  auto wait_all = [&](absl::Duration budget) {
    const absl::Time deadline = absl::Now() + budget;
    for (size_t i = 0; i < found.size(); ++i) {
      if (ended[i]) continue;
      const int left = static_cast<int>(
          std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
      ended[i] = WaitForExit(found[i].pidfd, left);
    }
  };
  wait_all(absl::Seconds(2));
  std::vector<bool> killed(found.size(), false);
  for (size_t i = 0; i < found.size(); ++i) {
    if (!ended[i]) killed[i] = PidfdSignal(found[i].pidfd, SIGKILL) == 0;
  }
  wait_all(absl::Seconds(2));
  for (size_t i = 0; i < found.size(); ++i) {
    const std::string what = absl::StrCat(found[i].name, " (pid ", found[i].pid,
                                          ") that a previous leashd left running");
    if (!ended[i]) {
      lines.push_back(absl::StrCat("could not stop ", what, ": still running 2 s after SIGKILL"));
    } else {
      lines.push_back(absl::StrCat(killed[i] ? "killed " : "stopped ", what,
                                   killed[i] ? " (SIGTERM was not enough)" : ""));
    }
  }
}

}  // namespace

bool IsSidecarOf(absl::string_view cmdline, const std::vector<std::string>& binaries,
                 const std::string& admin_socket) {
  if (!cmdline.empty() && cmdline.back() == '\0') cmdline.remove_suffix(1);
  const std::vector<absl::string_view> args = absl::StrSplit(cmdline, '\0');
  if (args.empty()) return false;
  const absl::string_view program = args[0];
  const absl::string_view base_name = program.substr(program.rfind('/') + 1);
  const bool named = std::any_of(binaries.begin(), binaries.end(), [&](const std::string& binary) {
    return binary == program || (binary.find('/') == std::string::npos && binary == base_name);
  });
  if (!named) return false;
  const std::string socket = absl::StrCat("--socket=", admin_socket);
  const std::string admin = absl::StrCat("--admin-socket=", admin_socket);
  return std::any_of(args.begin() + 1, args.end(),
                     [&](absl::string_view arg) { return arg == socket || arg == admin; });
}

namespace {

// Every live process IsSidecarOf says is one of `binaries`, running as root from that binary,
// held by a pidfd opened before its command line was read.
std::vector<Leftover> FindLeftovers(const std::vector<std::string>& binaries,
                                    const std::string& admin_socket,
                                    std::vector<std::string>& lines) {
  std::vector<Leftover> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    lines.push_back(absl::StrCat("cannot look for sidecars a previous leashd left running: "
                                 "opendir /proc: errno ", errno));
    return found;
  }
  while (const dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0 || pid == getpid()) continue;
    // The pidfd first: if the command line read next belongs to this process, the pidfd is
    // still alive after the read, and signals go to it and nothing else.
    const long pidfd = syscall(kSysPidfdOpen, pid, 0);
    if (pidfd < 0) {
      if (errno == ENOSYS) {
        lines.push_back("cannot look for sidecars a previous leashd left running: this kernel "
                        "has no pidfd_open (Linux >= 5.3)");
        break;
      }
      continue;
    }
    const absl::StatusOr<std::string> cmdline = base::ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (cmdline.ok() && IsSidecarOf(*cmdline, binaries, admin_socket) &&
        RunsAsRootFrom(pid, *cmdline) && PidfdSignal(static_cast<int>(pidfd), 0) == 0) {
      found.push_back(Leftover{static_cast<int>(pidfd), pid, NameOf(*cmdline), *cmdline});
      continue;
    }
    close(static_cast<int>(pidfd));
  }
  closedir(proc);
  return found;
}

}  // namespace

std::vector<std::string> StopLeftoverSidecars(const std::vector<std::string>& binaries,
                                              const std::string& admin_socket) {
  std::vector<std::string> lines;
  const std::vector<Leftover> found = FindLeftovers(binaries, admin_socket, lines);
  StopAll(found, lines);
  for (const Leftover& leftover : found) close(leftover.pidfd);
  return lines;
}

std::optional<std::pair<int, int>> WatcherGroupNumbers(absl::string_view cmdline) {
  if (!cmdline.empty() && cmdline.back() == '\0') cmdline.remove_suffix(1);
  int group = -1, table = -1;
  for (absl::string_view arg : absl::StrSplit(cmdline, '\0')) {
    if (absl::ConsumePrefix(&arg, "--fanotify-fd=")) {
      if (!absl::SimpleAtoi(arg, &group)) group = -1;
    } else if (absl::ConsumePrefix(&arg, "--pending-table-fd=")) {
      if (!absl::SimpleAtoi(arg, &table)) table = -1;
    }
  }
  if (group < 0 || table < 0) return std::nullopt;
  return std::make_pair(group, table);
}

std::optional<LeftoverGroup> TakeLeftoverGroup(const std::string& fswatch_binary,
                                               const std::string& admin_socket,
                                               std::vector<std::string>& lines) {
  std::optional<LeftoverGroup> taken;
  for (const Leftover& leftover : FindLeftovers({fswatch_binary}, admin_socket, lines)) {
    const std::optional<std::pair<int, int>> numbers = WatcherGroupNumbers(leftover.cmdline);
    if (!taken && numbers) {
      const long group = syscall(kSysPidfdGetfd, leftover.pidfd, numbers->first, 0);
      const int group_error = errno;
      const long table = syscall(kSysPidfdGetfd, leftover.pidfd, numbers->second, 0);
      const int table_error = errno;
      if (group >= 0 && table >= 0) {
        taken = LeftoverGroup{static_cast<int>(group), static_cast<int>(table), leftover.pid};
        lines.push_back(absl::StrCat("took over the fanotify group ", leftover.name, " (pid ",
                                     leftover.pid, ") that a previous leashd left running "
                                     "holds: its marks stay while the leftovers stop"));
      } else {
        if (group >= 0) close(static_cast<int>(group));
        if (table >= 0) close(static_cast<int>(table));
        lines.push_back(absl::StrCat(
            "cannot take the fanotify group from ", leftover.name, " (pid ", leftover.pid,
            "): pidfd_getfd: errno ", group >= 0 ? table_error : group_error,
            "; a new group is made, and the old one closes when the leftovers stop"));
      }
    }
    close(leftover.pidfd);
  }
  return taken;
}

}  // namespace leash::controlplane
