#include "controlplane/instance_lock.h"

#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/atomic_file.h"
#include "base/read_file.h"

namespace leash::controlplane {
namespace {

// Who holds the lock at `path`: "pid N", or that it is still starting.
std::string DescribeHolder(const std::string& path) {
  std::string pid;
  if (absl::StatusOr<std::string> text = base::ReadFile(path); text.ok()) {
    pid = std::string(absl::StripAsciiWhitespace(*text));
  }
  if (pid.empty()) return absl::StrCat("its pid is not in ", path, " yet: it is still starting");
  return absl::StrCat("pid ", pid);
}

// The lock at `path` with this process's pid in it; nullopt when it is still held after `wait`.
absl::StatusOr<std::optional<base::FileLock>> LockWithPid(const std::string& path,
                                                    absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    absl::StatusOr<std::optional<base::FileLock>> lock = base::FileLock::TryExclusive(path);
    if (!lock.ok()) return lock.status();
    if (lock->has_value()) {
      // Read by whoever finds it locked: unlike the pidfile, never left naming a dead process.
      if (absl::Status said = (*lock)->Write(absl::StrCat(getpid(), "\n")); !said.ok()) {
        return said;
      }
      return lock;
    }
    if (absl::Now() >= deadline) return lock;
    absl::SleepFor(absl::Milliseconds(50));
  }
}

// <dir>/net-<inode of this process's network namespace>.lock, the folder made if missing.
absl::StatusOr<std::string> NetnsLockPath(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir));
  }
  struct stat folder {};
  if (lstat(dir.c_str(), &folder) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("stat ", dir));
  if (!S_ISDIR(folder.st_mode) || folder.st_uid != 0 || (folder.st_mode & 022) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        dir, " must be a folder owned by root and writable by root only (it holds the lock of "
             "each network namespace's leashd); fix it with: chown root:root ", dir,
        " && chmod 0755 ", dir));
  }
  struct stat ns {};
  if (stat("/proc/self/ns/net", &ns) != 0) {
    return absl::ErrnoToStatus(errno, "stat /proc/self/ns/net");
  }
  return absl::StrCat(dir, "/net-", ns.st_ino, ".lock");
}

}  // namespace

absl::StatusOr<InstanceLock> LockNetworkNamespace(absl::Duration wait,
                                                  const std::string& netns_lock_dir) {
  absl::StatusOr<std::string> path = NetnsLockPath(netns_lock_dir);
  if (!path.ok()) return path.status();
  absl::StatusOr<std::optional<base::FileLock>> lock = LockWithPid(*path, wait);
  if (!lock.ok()) return lock.status();
  InstanceLock out;
  if (!lock->has_value()) {
    out.held_by =
        absl::StrCat("a leashd is running in this network namespace (", DescribeHolder(*path),
                     ", lock ", *path, "), or `leash teardown` is releasing its chains");
    return out;
  }
  out.network_namespace = std::move(*lock);
  return out;
}

absl::StatusOr<InstanceLock> LockInstance(const std::string& run_dir, absl::Duration wait,
                                          const std::string& netns_lock_dir) {
  const std::string path = absl::StrCat(run_dir, "/", kInstanceLockName);
  absl::StatusOr<std::optional<base::FileLock>> run = LockWithPid(path, wait);
  if (!run.ok()) return run.status();
  if (!run->has_value()) {
    InstanceLock out;
    out.held_by = absl::StrCat("a leashd is running on ", run_dir, " (", DescribeHolder(path),
                               "), or `leash teardown` is releasing its chains");
    return out;
  }
  absl::StatusOr<InstanceLock> out = LockNetworkNamespace(wait, netns_lock_dir);
  if (!out.ok() || !out->acquired()) return out;  // the run folder's lock is let go
  out->run_dir = std::move(*run);
  return out;
}

}  // namespace leash::controlplane
