#include "fswatch/exec_facts.h"

#include <elf.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/elf_interpreter.h"
#include "engine/compiled_policy.h"

namespace leash::fswatch {
using engine::RootOnlyWritable;

int RootControlledProgram(int fd, absl::string_view path, uint32_t uid, uint32_t mode,
                          uint64_t dev, uint64_t ino, bool& out) {
  out = false;
  if (!S_ISREG(mode) || !RootOnlyWritable(uid, mode)) return 0;
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) return errno;
  // A FUSE server reports whatever owner and mode it likes.
  if (static_cast<uint64_t>(fs.f_type) == FUSE_SUPER_MAGIC) return 0;
  const size_t slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == absl::string_view::npos ||
      slash + 1 >= path.size() || path.size() > PATH_MAX) {
    return 0;
  }
  char folder[PATH_MAX + 1];
  const size_t folder_len = slash == 0 ? 1 : slash;
  memcpy(folder, path.data(), folder_len);
  folder[folder_len] = '\0';
  char name[NAME_MAX + 1];
  const size_t name_len = path.size() - slash - 1;
  if (name_len > NAME_MAX) return 0;
  memcpy(name, path.data() + slash + 1, name_len);
  name[name_len] = '\0';

  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const int dir = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, folder, &how, sizeof(how)));
  if (dir < 0) return 0;
  struct statx folder_facts;
  struct statx child;
  const bool read =
      statx(dir, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_UID,
            &folder_facts) == 0 &&
      statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
            STATX_TYPE | STATX_INO, &child) == 0;
  close(dir);
  if (!read) return 0;
  out = S_ISDIR(folder_facts.stx_mode) &&
        RootOnlyWritable(folder_facts.stx_uid, folder_facts.stx_mode) &&
        makedev(child.stx_dev_major, child.stx_dev_minor) == dev && child.stx_ino == ino;
  return 0;
}

int IdentityOnHost(const char* path, uint64_t& dev, uint64_t& ino) {
  if (path[0] != '/') return EINVAL;
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  const int file = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how)));
  if (file < 0) return errno;
  struct statx facts;
  const int read = statx(file, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &facts);
  const int read_error = errno;
  close(file);
  if (read != 0) return read_error;
  dev = makedev(facts.stx_dev_major, facts.stx_dev_minor);
  ino = facts.stx_ino;
  return 0;
}

int ReadElfInterpreter(int fd, char* buffer, size_t capacity, size_t& len) {
  return base::ReadElfInterpreter(fd, buffer, capacity, len);
}

int LoadingElfInterpreter(pid_t pid, bool& out) {
  out = false;
  char path[48];
  snprintf(path, sizeof(path), "/proc/%d/task", static_cast<int>(pid));
  struct stat task;
  if (stat(path, &task) != 0) return errno == ENOENT ? ESRCH : errno;
  // A task folder's link count is 2 + its threads. With one thread, the thread in this exec
  // is the process's only one: no other thread of it can be opening anything meanwhile.
  if (task.st_nlink != 3) return 0;
  snprintf(path, sizeof(path), "/proc/%d/stack", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char text[4096];
  size_t len = 0;
  while (len < sizeof(text) - 1) {
    const ssize_t n = read(fd, text + len, sizeof(text) - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  close(fd);
  text[len] = '\0';
  // "[<0>] load_elf_binary+0x.../0x...": the interpreter's open_exec() from inside the ELF
  // loader. A program's own open is made from alloc_bprm, and a script's interpreter from
  // load_script: both are commands of their own.
  out = strstr(text, "] load_elf_binary+") != nullptr;
  return 0;
}

}  // namespace leash::fswatch
