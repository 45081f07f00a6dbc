#include "proto/sidecar/watcher_handover.h"

#include <fcntl.h>
#include <linux/fanotify.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/sidecar/pidfd_info.h"

namespace leash::sidecar {
namespace {

#ifndef FAN_REPORT_FD_ERROR
#define FAN_REPORT_FD_ERROR 0x00002000  // Linux 6.13; Debian 12's headers predate it
#endif

constexpr long kSysPidfdOpen = 434;
constexpr size_t kTableBytes = sizeof(uint64_t) * (kWatcherDescriptorLimit + 1);

}  // namespace

int TakeOverSignal() { return SIGUSR1; }

absl::StatusOr<PermissionGroup> OpenPermissionGroup(bool report_pidfds) {
  const unsigned base = FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_UNLIMITED_QUEUE;
  const unsigned event_flags = O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NONBLOCK;
  // Each optional flag is dropped in turn where the kernel refuses it (EINVAL): FD_ERROR
  // (6.13) first, then PIDFD (5.15).
  const unsigned pidfd = report_pidfds ? FAN_REPORT_PIDFD : 0;
  for (const unsigned flags : {base | pidfd | FAN_REPORT_FD_ERROR, base | pidfd, base}) {
    const int fd = fanotify_init(flags, event_flags);
    if (fd >= 0) return PermissionGroup{fd, flags};
    const int error = errno;
    if (error == EINVAL) continue;
    if (error == EPERM) {
      return absl::PermissionDeniedError(
          "fanotify_init: EPERM: the fanotify group needs CAP_SYS_ADMIN (run leashd and "
          "leash-fswatch as root)");
    }
    if (error == ENOSYS) {
      return absl::UnimplementedError(
          "fanotify_init: ENOSYS: this kernel has no fanotify (CONFIG_FANOTIFY); filesystem "
          "enforcement needs Linux >= 5.0 with CONFIG_FANOTIFY_ACCESS_PERMISSIONS");
    }
    return absl::ErrnoToStatus(error, "fanotify_init(FAN_CLASS_CONTENT)");
  }
  return absl::UnimplementedError(
      "fanotify_init(FAN_CLASS_CONTENT | FAN_UNLIMITED_QUEUE): EINVAL: this kernel has no "
      "fanotify permission events (CONFIG_FANOTIFY_ACCESS_PERMISSIONS)");
}

absl::StatusOr<unsigned> PermissionGroupFlags(int fd) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  const int info = open(path, O_RDONLY | O_CLOEXEC);
  if (info < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  char text[4096];
  const ssize_t n = read(info, text, sizeof(text) - 1);
  close(info);
  if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path));
  for (absl::string_view line : absl::StrSplit(absl::string_view(text, n), '\n')) {
    if (!absl::ConsumePrefix(&line, "fanotify flags:")) continue;
    const size_t space = line.find(' ');
    unsigned flags = 0;
    if (absl::SimpleHexAtoi(line.substr(0, space), &flags)) return flags;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "descriptor ", fd, " is not a fanotify group (", path,
      " has no 'fanotify flags:' line); pass the group leashd made"));
}

bool KernelHasPidfdInfo() {
  const long pidfd = syscall(kSysPidfdOpen, getpid(), 0);
  if (pidfd < 0) return false;
  PidfdInfo info;
  const bool works = GetPidfdCreds(static_cast<int>(pidfd), info) == 0 && info.ruid == getuid();
  close(static_cast<int>(pidfd));
  return works;
}

absl::StatusOr<int> PendingTable::Create() {
  const int fd = memfd_create("leash-fswatch-pending", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create for the watcher's pending table");
  if (ftruncate(fd, kTableBytes) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error, "sizing the watcher's pending table");
  }
  return fd;
}

absl::StatusOr<PendingTable*> PendingTable::Map(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return absl::ErrnoToStatus(errno, "fstat of the pending table");
  if (static_cast<size_t>(st.st_size) != kTableBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "descriptor ", fd, " is ", st.st_size, " bytes; the pending table is ", kTableBytes,
        " (leashd and leash-fswatch are of different builds?)"));
  }
  void* at = mmap(nullptr, kTableBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap of the pending table");
  static_assert(sizeof(PendingTable) == kTableBytes, "layout");
  return static_cast<PendingTable*>(at);
}

}  // namespace leash::sidecar
