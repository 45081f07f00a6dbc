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

#include "engine/compiled_policy.h"

namespace leash::fswatch {
namespace {

using engine::RootOnlyWritable;

bool ReadAll(int fd, void* out, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, static_cast<char*>(out) + done, size - done,
                            static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

template <typename T>
T Swapped(T value, bool swap) {
  if (!swap) return value;
  T out;
  const auto* in = reinterpret_cast<const unsigned char*>(&value);
  auto* o = reinterpret_cast<unsigned char*>(&out);
  for (size_t i = 0; i < sizeof(T); ++i) o[i] = in[sizeof(T) - 1 - i];
  return out;
}

// Finds PT_INTERP among the program headers of an ELF file of one class.
template <typename Ehdr, typename Phdr>
int FindInterpreter(int fd, const unsigned char* ident, char* buffer, size_t capacity,
                    size_t& len) {
  const bool swap = (ident[EI_DATA] == ELFDATA2MSB) != (__BYTE_ORDER == __BIG_ENDIAN);
  Ehdr header;
  if (!ReadAll(fd, &header, sizeof(header), 0)) return 0;  // too short to be a program
  const uint64_t phoff = Swapped(header.e_phoff, swap);
  const uint16_t phnum = Swapped(header.e_phnum, swap);
  if (Swapped(header.e_phentsize, swap) != sizeof(Phdr)) return 0;
  // The kernel refuses more than 64 KiB of program headers; so does this, in steps that fit
  // on the stack.
  if (phnum == 0 || static_cast<uint64_t>(phnum) * sizeof(Phdr) > 65536) return 0;
  Phdr headers[32];
  for (uint16_t first = 0; first < phnum; first += 32) {
    const uint16_t count = phnum - first < 32 ? phnum - first : 32;
    if (!ReadAll(fd, headers, count * sizeof(Phdr), phoff + first * sizeof(Phdr))) return 0;
    for (uint16_t i = 0; i < count; ++i) {
      if (Swapped(headers[i].p_type, swap) != PT_INTERP) continue;
      const uint64_t size = Swapped(headers[i].p_filesz, swap);
      // The kernel's own bounds: at least 2 bytes, at most PATH_MAX, NUL-terminated.
      if (size < 2 || size > PATH_MAX || size > capacity) return 0;
      if (!ReadAll(fd, buffer, size, Swapped(headers[i].p_offset, swap))) return EIO;
      if (buffer[size - 1] != '\0') return 0;
      len = strnlen(buffer, size);
      return 0;
    }
  }
  return 0;
}

}  // namespace

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
  len = 0;
  unsigned char ident[EI_NIDENT];
  if (!ReadAll(fd, ident, sizeof(ident), 0)) return 0;
  if (memcmp(ident, ELFMAG, SELFMAG) != 0) return 0;
  if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) return 0;
  if (ident[EI_CLASS] == ELFCLASS64) {
    return FindInterpreter<Elf64_Ehdr, Elf64_Phdr>(fd, ident, buffer, capacity, len);
  }
  if (ident[EI_CLASS] == ELFCLASS32) {
    return FindInterpreter<Elf32_Ehdr, Elf32_Phdr>(fd, ident, buffer, capacity, len);
  }
  return 0;
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
