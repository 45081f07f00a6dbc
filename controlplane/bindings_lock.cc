#include "controlplane/bindings_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

absl::StatusOr<BindingsLock> BindingsLock::Acquire(const std::string& state_dir, Mode mode) {
  const std::string path = absl::StrCat(state_dir, "/", kBindingsLockName);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  const int operation = mode == Mode::kExclusive ? LOCK_EX : LOCK_SH;
  while (flock(fd, operation) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error, absl::StrCat("flock ", path));
  }
  return BindingsLock(fd);
}

BindingsLock& BindingsLock::operator=(BindingsLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

BindingsLock::~BindingsLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace leash::controlplane
