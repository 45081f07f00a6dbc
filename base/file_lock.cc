#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace leash::base {
namespace {

// Returns the descriptor holding the lock, -1 when `operation` has LOCK_NB and another
// holder has it, or the error.
absl::StatusOr<int> OpenAndLock(const std::string& path, int operation) {
  // O_CLOEXEC: a child leashd spawns (a sidecar) must not go on holding the lock after
  // leashd itself is gone.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  while (flock(fd, operation) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    close(fd);
    if (error == EWOULDBLOCK && (operation & LOCK_NB)) return -1;
    return absl::ErrnoToStatus(error, absl::StrCat("flock ", path));
  }
  return fd;
}

}  // namespace

absl::StatusOr<FileLock> FileLock::Acquire(const std::string& path, Mode mode) {
  absl::StatusOr<int> fd = OpenAndLock(path, mode == Mode::kExclusive ? LOCK_EX : LOCK_SH);
  if (!fd.ok()) return fd.status();
  return FileLock(*fd);
}

absl::StatusOr<std::optional<FileLock>> FileLock::TryExclusive(const std::string& path) {
  absl::StatusOr<int> fd = OpenAndLock(path, LOCK_EX | LOCK_NB);
  if (!fd.ok()) return fd.status();
  if (*fd < 0) return std::optional<FileLock>();
  return std::optional<FileLock>(FileLock(*fd));
}

absl::Status FileLock::Write(absl::string_view content) {
  if (ftruncate(fd_, 0) != 0) return absl::ErrnoToStatus(errno, "ftruncate a lock file");
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = pwrite(fd_, content.data() + done, content.size() - done,
                             static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::ErrnoToStatus(n < 0 ? errno : EIO, "write a lock file");
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace leash::base
