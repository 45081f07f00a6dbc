// An advisory lock on a file (flock(2)), held for as long as the FileLock lives. The kernel
// drops it when the holder's descriptor closes, however the process ends (SIGKILL included),
// so a crash never leaves a lock behind to clean up.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::base {

class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Opens (creating, mode 0600) `path` and waits for the lock. The folder must exist. Errors
  // carry errno and the path.
  static absl::StatusOr<FileLock> Acquire(const std::string& path, Mode mode);
  // Takes the exclusive lock only if nobody holds the file locked: nullopt when someone does.
  static absl::StatusOr<std::optional<FileLock>> TryExclusive(const std::string& path);

  // Replaces the locked file's content (e.g. the holder's pid, for whoever finds it locked).
  absl::Status Write(absl::string_view content);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Releases the lock (closing the descriptor releases the flock).
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace leash::base
