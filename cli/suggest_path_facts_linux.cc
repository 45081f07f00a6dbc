#include "cli/suggest_path_facts_linux.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/elf_interpreter.h"

namespace leash::cli {
namespace {

absl::Status ErrnoStatus(int error, absl::string_view what, absl::string_view path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", strerror(error));
  return error == ENOENT || error == ENOTDIR ? absl::NotFoundError(message)
                                             : absl::PermissionDeniedError(message);
}

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// The ACL's on-disk form (linux/posix_acl_xattr.h): a 4-byte version 2, then 8-byte entries
// {u16 tag, u16 perm, u32 id}.
constexpr uint32_t kAclVersion = 2;
constexpr uint16_t kAclUser = 0x02;
constexpr uint16_t kAclGroupObj = 0x04;
constexpr uint16_t kAclGroup = 0x08;
constexpr uint16_t kAclMask = 0x10;
constexpr uint16_t kAclWrite = 0x02;

}  // namespace

bool AclGrantsWrite(const std::string& xattr) {
  if (xattr.size() < 4 || (xattr.size() - 4) % 8 != 0) return false;
  uint32_t version = 0;
  memcpy(&version, xattr.data(), 4);
  if (version != kAclVersion) return false;
  bool mask_writes = true;  // no mask entry: nothing caps the others
  bool named_write = false;
  for (size_t at = 4; at < xattr.size(); at += 8) {
    uint16_t tag = 0;
    uint16_t perm = 0;
    uint32_t id = 0;
    memcpy(&tag, xattr.data() + at, 2);
    memcpy(&perm, xattr.data() + at + 2, 2);
    memcpy(&id, xattr.data() + at + 4, 4);
    const bool writes = (perm & kAclWrite) != 0;
    if (tag == kAclMask) mask_writes = writes;
    if (tag == kAclUser && id != 0 && writes) named_write = true;
    if ((tag == kAclGroup || tag == kAclGroupObj) && writes) named_write = true;
  }
  return named_write && mask_writes;
}

absl::StatusOr<NodeFacts> LinuxPathFacts::Lstat(const std::string& path) const {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot lstat", path);
  NodeFacts facts;
  facts.type = S_ISREG(st.st_mode)   ? NodeFacts::Type::kFile
               : S_ISDIR(st.st_mode) ? NodeFacts::Type::kDirectory
               : S_ISLNK(st.st_mode) ? NodeFacts::Type::kSymlink
                                     : NodeFacts::Type::kOther;
  facts.uid = st.st_uid;
  facts.gid = st.st_gid;
  facts.mode = st.st_mode & 07777;
  facts.dev = st.st_dev;
  facts.ino = st.st_ino;
  // statfs follows links: a link's file system is its folder's.
  struct statfs fs;
  const std::string on = S_ISLNK(st.st_mode) ? FolderOf(path) : path;
  if (statfs(on.c_str(), &fs) != 0) return ErrnoStatus(errno, "cannot statfs", on);
  if (static_cast<uint64_t>(fs.f_type) == PROC_SUPER_MAGIC) {
    facts.filesystem = NodeFacts::Filesystem::kProc;
  } else if (static_cast<uint64_t>(fs.f_type) == FUSE_SUPER_MAGIC) {
    facts.filesystem = NodeFacts::Filesystem::kFuse;
  }
  if (!S_ISLNK(st.st_mode)) {
    char acl[4 + 8 * 64];
    const ssize_t len = lgetxattr(path.c_str(), "system.posix_acl_access", acl, sizeof(acl));
    if (len >= 0) {
      facts.acl_grants_write = AclGrantsWrite(std::string(acl, static_cast<size_t>(len)));
    } else if (errno == ERANGE) {
      // More entries than the buffer holds: too many to read here, so taken as granting.
      facts.acl_grants_write = true;
    } else if (errno != ENODATA && errno != EOPNOTSUPP) {
      return ErrnoStatus(errno, "cannot read the ACL of", path);
    }
  }
  return facts;
}

absl::StatusOr<std::string> LinuxPathFacts::ReadLink(const std::string& path) const {
  char target[PATH_MAX + 1];
  const ssize_t len = readlink(path.c_str(), target, PATH_MAX);
  if (len < 0) return ErrnoStatus(errno, "cannot read the link", path);
  return std::string(target, static_cast<size_t>(len));
}

absl::StatusOr<std::vector<std::string>> LinuxPathFacts::ListFolder(
    const std::string& folder) const {
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return ErrnoStatus(errno, "cannot list", folder);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(absl::StrCat(folder == "/" ? "" : folder, "/", name));
  }
  const int error = errno;
  closedir(dir);
  if (error != 0) return ErrnoStatus(error, "cannot list", folder);
  return names;
}

absl::StatusOr<std::string> LinuxPathFacts::ElfInterpreter(const std::string& path) const {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  char interpreter[PATH_MAX + 1];
  size_t len = 0;
  const int error = base::ReadElfInterpreter(fd, interpreter, PATH_MAX, len);
  close(fd);
  if (error != 0) return ErrnoStatus(error, "cannot read the ELF headers of", path);
  return std::string(interpreter, len);
}

}  // namespace leash::cli
