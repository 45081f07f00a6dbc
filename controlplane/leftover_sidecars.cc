#include "controlplane/leftover_sidecars.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controlplane/atomic_file.h"

namespace leash::controlplane {
namespace {

constexpr long kSysPidfdOpen = 434;          // Linux >= 5.3
constexpr long kSysPidfdSendSignal = 424;    // Linux >= 5.1

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

// Stops one leftover sidecar through its pidfd; returns the line for the log.
std::string Stop(int pidfd, pid_t pid, const std::string& name) {
  const std::string what = absl::StrCat(name, " (pid ", pid, ") that a previous leashd left running");
  if (const int error = PidfdSignal(pidfd, SIGTERM); error != 0) {
    return error == ESRCH ? absl::StrCat(what, " ended by itself")
                          : absl::StrCat("could not stop ", what, ": errno ", error);
  }
  if (WaitForExit(pidfd, 2000)) return absl::StrCat("stopped ", what);
  PidfdSignal(pidfd, SIGKILL);
  if (WaitForExit(pidfd, 2000)) return absl::StrCat("killed ", what, " (SIGTERM was not enough)");
  return absl::StrCat("could not stop ", what, ": still running 2 s after SIGKILL");
}

}  // namespace

bool IsSidecarOf(absl::string_view cmdline, const std::vector<std::string>& binaries,
                 const std::string& admin_socket) {
  if (!cmdline.empty() && cmdline.back() == '\0') cmdline.remove_suffix(1);
  const std::vector<absl::string_view> args = absl::StrSplit(cmdline, '\0');
  if (args.empty() || std::find(binaries.begin(), binaries.end(), args[0]) == binaries.end()) {
    return false;
  }
  const std::string socket = absl::StrCat("--socket=", admin_socket);
  const std::string admin = absl::StrCat("--admin-socket=", admin_socket);
  return std::any_of(args.begin() + 1, args.end(),
                     [&](absl::string_view arg) { return arg == socket || arg == admin; });
}

std::vector<std::string> StopLeftoverSidecars(const std::vector<std::string>& binaries,
                                              const std::string& admin_socket) {
  std::vector<std::string> lines;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    lines.push_back(absl::StrCat("cannot look for sidecars a previous leashd left running: "
                                 "opendir /proc: errno ", errno));
    return lines;
  }
  while (const dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0 || pid == getpid()) continue;
    // The pidfd first: if the command line read next belongs to this process, the pidfd is
    // still alive after the read, and signals go to it and nothing else.
    const long pidfd = syscall(kSysPidfdOpen, pid, 0);
    if (pidfd < 0) continue;
    const absl::StatusOr<std::string> cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (cmdline.ok() && IsSidecarOf(*cmdline, binaries, admin_socket) &&
        PidfdSignal(static_cast<int>(pidfd), 0) == 0) {
      lines.push_back(Stop(static_cast<int>(pidfd), pid, NameOf(*cmdline)));
    }
    close(static_cast<int>(pidfd));
  }
  closedir(proc);
  return lines;
}

}  // namespace leash::controlplane
