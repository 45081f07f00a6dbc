// What `leash suggest` asks the file system before it proposes a path: who owns each name on
// the way to it, its mode, what a symbolic link says, which file system holds it, and which
// ELF interpreter a program names. Behind this narrow interface so the judgement above it
// (suggest_path_check.h) stays pure; the real one is suggest_path_facts_linux.h, the fake
// cli/testing/fake_path_facts.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leash::cli {

// One name, not followed (lstat).
struct NodeFacts {
  enum class Type { kFile, kDirectory, kSymlink, kOther };
  enum class Filesystem {
    kOrdinary,
    // procfs: its links (/proc/self/exe, /proc/<pid>/fd/<n>) name whatever a process holds.
    kProc,
    // FUSE: its server reports whatever owner and mode it likes.
    kFuse,
  };
  Type type = Type::kOther;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0;  // permission bits with setuid/setgid/sticky (st_mode & 07777)
  uint64_t dev = 0;
  uint64_t ino = 0;
  Filesystem filesystem = Filesystem::kOrdinary;
  // A POSIX access ACL names a user other than root, or a group, with write. (With an ACL the
  // group bits of `mode` are its mask, which caps those entries; both are looked at.)
  bool acl_grants_write = false;
};

class PathFacts {
 public:
  virtual ~PathFacts() = default;

  // The facts of the absolute `path` itself (a link is not followed). NotFound when it does
  // not exist; another status naming the path and errno when it cannot be read.
  virtual absl::StatusOr<NodeFacts> Lstat(const std::string& path) const = 0;

  // What the symbolic link at `path` says, as written.
  virtual absl::StatusOr<std::string> ReadLink(const std::string& path) const = 0;

  // The full paths of the names in the folder `folder` (not recursive; "." and ".." left out).
  virtual absl::StatusOr<std::vector<std::string>> ListFolder(const std::string& folder) const = 0;

  // The PT_INTERP the ELF program at the absolute `path` names ("" when it is not ELF or names
  // none), the file opened as the host's root sees it, links followed.
  virtual absl::StatusOr<std::string> ElfInterpreter(const std::string& path) const = 0;
};

}  // namespace leash::cli
