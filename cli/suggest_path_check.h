// Whether a path `leash suggest` might propose could be turned by the agent into a way out:
// a command entry matches whatever file sits at its path, so a program (or a link or folder on
// the way to it) that the agent, or any account but root, can replace would run anything once
// allowed; and the ELF loader (ld-linux, ld.so, ld-musl) runs any program it is handed. Pure:
// the file system is asked through suggest_path_facts.h.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/suggest_path_facts.h"

namespace leash::cli {

// The most symbolic links a resolution follows, as the kernel's own limit (MAXSYMLINKS).
inline constexpr int kMaxLinkHops = 40;

struct Resolution {
  // Empty when only root can change what `path` leads to; else why not, for the operator.
  std::string why;
  // The path with every link followed (set when the walk reached it).
  std::string resolved;
  NodeFacts facts;  // of `resolved`
  // Every name the walk met, links included, in order: the loader's names are checked on all.
  std::vector<std::string> names;
};

// Walks the absolute `path` from "/" one name at a time (links followed, "." and ".." as the
// kernel takes them) and checks that only root can change where it leads: every folder on the
// way owned by root and writable by no one else — a folder others may write (/tmp) passes only
// with its sticky bit and the next name owned by root, which others then cannot rename or
// remove — and the last name owned by root with no group or other write and no ACL granting
// write. Nothing on procfs (whose links name what some process holds) or FUSE (whose owners
// its server makes up). A fact that cannot be read is a reason, never a pass.
Resolution ResolveRootOnly(const PathFacts& facts, absl::string_view path);

// Judges programs the decision log shows a subject ran, as command entries.
class ProgramCheck {
 public:
  // `logged_interpreters`: the paths the log names as an allowed program's ELF interpreter.
  // `programs`: every program to be judged, and programs of the host; with every program in
  // `system_folders`, the PT_INTERP each names is a loader too, whatever its name.
  ProgramCheck(const PathFacts& facts, const std::set<std::string>& logged_interpreters,
               const std::vector<std::string>& programs,
               const std::vector<std::string>& system_folders = {});

  // Empty when `binary` may be suggested as a commands entry; else why not: not an absolute
  // path (a bare name is never proposed: the watcher logs the kernel's full path, and a name
  // would stand for whichever program PATH finds), a loader (by its name, a link's name, or
  // by being the very file some program's PT_INTERP names), or ResolveRootOnly's reason.
  std::string WhyNotSuggested(absl::string_view binary) const;

 private:
  const PathFacts& facts_;
  std::set<std::string> loader_paths_;                    // as named, and resolved
  std::set<std::pair<uint64_t, uint64_t>> loader_files_;  // (dev, ino)
};

// Whether a file name (the last component) is a dynamic loader's: "ld" followed by "-", "." or
// "64.", holding ".so" (ld-linux-x86-64.so.2, ld.so, ld-musl-x86_64.so.1, ld64.so.2,
// ld-2.36.so).
bool IsLoaderName(absl::string_view name);

}  // namespace leash::cli
