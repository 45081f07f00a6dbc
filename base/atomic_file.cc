#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace leash::base {
namespace {

WriteFaultHook& Hook() {
  static WriteFaultHook* hook = new WriteFaultHook();
  return *hook;
}

absl::Status ErrnoError(int error, absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

void SetWriteFaultHookForTesting(WriteFaultHook hook) { Hook() = std::move(hook); }

void CallWriteFaultHook(absl::string_view step, const std::string& path) {
  if (Hook()) Hook()(step, path);
}

absl::Status SyncDirectory(const std::string& dir) {
  CallWriteFaultHook("fsync-dir", dir);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open", dir);
  const int rc = fsync(fd);
  const int error = errno;
  close(fd);
  if (rc != 0) return ErrnoError(error, "fsync", dir);
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content, mode_t mode) {
  const std::string dir = DirName(path);
  std::string temp = absl::StrCat(path, ".tmp-XXXXXX");
  CallWriteFaultHook("open-temp", path);
  const int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "create temp file for", path);
  auto fail = [&](absl::Status status) {
    close(fd);
    unlink(temp.c_str());
    return status;
  };
  if (fchmod(fd, mode) != 0) return fail(ErrnoError(errno, "chmod", temp));
  CallWriteFaultHook("write-temp", path);
  if (absl::Status written = WriteAll(fd, content, temp); !written.ok()) return fail(written);
  CallWriteFaultHook("fsync-temp", path);
  if (fsync(fd) != 0) return fail(ErrnoError(errno, "fsync", temp));
  if (close(fd) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    return ErrnoError(error, "close", temp);
  }
  CallWriteFaultHook("rename", path);
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    return ErrnoError(error, absl::StrCat("rename ", temp, " to"), path);
  }
  return SyncDirectory(dir);
}

absl::Status AppendAndSync(const std::string& path, absl::string_view line, mode_t mode) {
  struct stat st;
  const bool existed = stat(path.c_str(), &st) == 0;
  CallWriteFaultHook("append", path);
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError(errno, "open", path);
  // One write(2): on O_APPEND the whole line lands at the end at once, or a short write is
  // reported (a torn line that readers detect, never a silent success).
  const ssize_t n = write(fd, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    const int error = n < 0 ? errno : EIO;
    close(fd);
    return ErrnoError(error, n < 0 ? "write" : "short write to", path);
  }
  CallWriteFaultHook("fsync-append", path);
  if (fsync(fd) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoError(error, "fsync", path);
  }
  close(fd);
  if (!existed) return SyncDirectory(DirName(path));
  return absl::OkStatus();
}

absl::Status RemoveFileDurably(const std::string& path) {
  CallWriteFaultHook("unlink", path);
  if (unlink(path.c_str()) != 0) {
    const int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    return ErrnoError(error, "unlink", path);
  }
  return SyncDirectory(DirName(path));
}

}  // namespace leash::base
