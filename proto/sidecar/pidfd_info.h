// ioctl(pidfd, PIDFD_GET_INFO) (Linux 6.13): a process's credentials through a pidfd. Debian
// 12's kernel headers predate it, so the uapi struct (include/uapi/linux/pidfd.h,
// PIDFD_INFO_SIZE_VER0 = 64 bytes) is declared here for the watcher and for leashd's choice of
// the group's flags.
#pragma once

#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>

namespace leash::sidecar {

struct PidfdInfo {
  uint64_t mask;
  uint64_t cgroupid;
  uint32_t pid;
  uint32_t tgid;
  uint32_t ppid;
  uint32_t ruid;
  uint32_t rgid;
  uint32_t euid;
  uint32_t egid;
  uint32_t suid;
  uint32_t sgid;
  uint32_t fsuid;
  uint32_t fsgid;
  int32_t exit_code;
};
static_assert(sizeof(PidfdInfo) == 64, "PIDFD_INFO_SIZE_VER0");
inline constexpr uint64_t kPidfdInfoCreds = 1ULL << 1;

// Fills `info` with the credentials of the process `pidfd` names. 0 or an errno (ESRCH: the
// process was reaped; ENOTTY/EINVAL: no PIDFD_GET_INFO on this kernel; ENODATA: no creds).
inline int GetPidfdCreds(int pidfd, PidfdInfo& info) {
  info = PidfdInfo{};
  info.mask = kPidfdInfoCreds;
  if (ioctl(pidfd, _IOWR(0xFF, 11, PidfdInfo), &info) != 0) return errno;
  return (info.mask & kPidfdInfoCreds) ? 0 : ENODATA;
}

}  // namespace leash::sidecar
