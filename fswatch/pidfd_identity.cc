#include "fswatch/pidfd_identity.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "proto/sidecar/pidfd_info.h"

namespace leash::fswatch {
namespace {

constexpr long kSysPidfdOpen = 434;  // all architectures, Linux >= 5.3

size_t PowerOfTwoAtMost(size_t n) {
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

int OpenPidfd(pid_t pid) {
  const long fd = syscall(kSysPidfdOpen, pid, 0);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

int ReadPidfdCreds(int pidfd, Creds& out) {
  sidecar::PidfdInfo info;
  if (const int error = sidecar::GetPidfdCreds(pidfd, info); error != 0) return error;
  out.ruid = info.ruid;
  out.euid = info.euid;
  out.fsuid = info.fsuid;
  out.rgid = info.rgid;
  return 0;
}

bool PidfdCredsWork() {
  const int pidfd = OpenPidfd(getpid());
  if (pidfd < 0) return false;
  Creds creds;
  const bool works = ReadPidfdCreds(pidfd, creds) == 0 && creds.ruid == getuid();
  close(pidfd);
  return works;
}

PidfdCache::PidfdCache(size_t slots) : slots_(PowerOfTwoAtMost(slots == 0 ? 1 : slots)) {}

PidfdCache::~PidfdCache() {
  for (Slot& slot : slots_) {
    if (slot.pidfd >= 0) close(slot.pidfd);
  }
}

int PidfdCache::CredsOf(pid_t pid, Creds& out) {
  // 0: a process outside this PID namespace. Alive (it waits for the answer) but nameable by
  // nothing here, so not ESRCH, which the loop reads as "nobody waits".
  if (pid <= 0) return EINVAL;
  Slot& slot = SlotFor(pid);
  if (slot.pid == pid && slot.pidfd >= 0) {
    const int error = ReadPidfdCreds(slot.pidfd, out);
    if (error != ESRCH) return error;
    // The process this pidfd names has been reaped: whoever holds `pid` now is another.
  }
  if (slot.pidfd >= 0) close(slot.pidfd);
  slot.pid = pid;
  slot.pidfd = OpenPidfd(pid);
  if (slot.pidfd < 0) {
    const int error = -slot.pidfd;
    slot.pidfd = -1;
    return error;
  }
  return ReadPidfdCreds(slot.pidfd, out);
}

size_t PidfdCache::open_pidfds() const {
  size_t n = 0;
  for (const Slot& slot : slots_) n += slot.pidfd >= 0 ? 1 : 0;
  return n;
}

}  // namespace leash::fswatch
