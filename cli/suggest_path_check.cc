#include "cli/suggest_path_check.h"

#include <deque>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace leash::cli {
namespace {

std::string Octal(uint32_t mode) { return absl::StrFormat("%04o", mode & 07777); }

std::string Join(const std::string& folder, absl::string_view name) {
  return absl::StrCat(folder == "/" ? "" : folder, "/", name);
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

bool OthersMayWrite(const NodeFacts& node) {
  return (node.mode & 022) != 0 || node.acl_grants_write;
}

std::string FilesystemReason(const std::string& path, const NodeFacts& node) {
  switch (node.filesystem) {
    case NodeFacts::Filesystem::kProc:
      return absl::StrCat(path,
                          " is on procfs, whose links name whatever a process holds "
                          "(/proc/self/exe, /proc/<pid>/fd/<n>)");
    case NodeFacts::Filesystem::kFuse:
      return absl::StrCat(path,
                          " is on a FUSE file system, whose server reports any owner and "
                          "mode it likes");
    default:
      return "";
  }
}

// Why the folder `folder` (facts `dir`) lets someone but root replace its entry `child_path`
// (facts `child`).
std::string FolderReason(const std::string& folder, const NodeFacts& dir,
                         const std::string& child_path, const NodeFacts& child) {
  if (std::string why = FilesystemReason(folder, dir); !why.empty()) return why;
  if (dir.uid != 0) {
    return absl::StrCat("the folder ", folder, " is owned by uid ", dir.uid,
                        ", who can replace anything in it");
  }
  if (!OthersMayWrite(dir)) return "";
  // The sticky bit: only the entry's owner (or the folder's, root) may rename or remove it.
  if ((dir.mode & 01000) != 0) {
    if (child.uid == 0) return "";
    return absl::StrCat("the folder ", folder, " (mode ", Octal(dir.mode),
                        ") lets others add names, and ", child_path, " in it is owned by uid ",
                        child.uid, ", who can replace it");
  }
  return absl::StrCat("the folder ", folder, " (mode ", Octal(dir.mode), ") ",
                      dir.acl_grants_write ? "has an ACL granting write to an account but root"
                                           : "is writable by its group or by others",
                      ", who can replace what is in it");
}

std::string LastReason(const std::string& path, const NodeFacts& node) {
  if (std::string why = FilesystemReason(path, node); !why.empty()) return why;
  if (node.uid != 0) {
    return absl::StrCat(path, " is owned by uid ", node.uid, ", who can rewrite it");
  }
  if (OthersMayWrite(node)) {
    return absl::StrCat(path, " (mode ", Octal(node.mode), ") ",
                        node.acl_grants_write ? "has an ACL granting write to an account but root"
                                              : "is writable by its group or by others");
  }
  return "";
}

}  // namespace

bool IsLoaderName(absl::string_view name) {
  if (!absl::StartsWith(name, "ld")) return false;
  absl::string_view rest = name.substr(2);
  if (!absl::StartsWith(rest, "-") && !absl::StartsWith(rest, ".") &&
      !absl::StartsWith(rest, "64.")) {
    return false;
  }
  return absl::StrContains(rest, ".so");
}

Resolution ResolveRootOnly(const PathFacts& facts, absl::string_view path) {
  Resolution out;
  if (path.empty() || path.front() != '/') {
    out.why = "not an absolute path";
    return out;
  }
  absl::StatusOr<NodeFacts> root = facts.Lstat("/");
  if (!root.ok()) {
    out.why = std::string(root.status().message());
    return out;
  }
  std::deque<std::string> pending = absl::StrSplit(path, '/', absl::SkipEmpty());
  std::string current = "/";
  NodeFacts current_facts = *root;
  int hops = 0;
  while (!pending.empty()) {
    const std::string name = std::move(pending.front());
    pending.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      // `current` holds no link, so its parent is the one ".." reaches.
      current = Parent(current);
      absl::StatusOr<NodeFacts> parent = facts.Lstat(current);
      if (!parent.ok()) {
        out.why = std::string(parent.status().message());
        return out;
      }
      current_facts = *parent;
      continue;
    }
    const std::string child = Join(current, name);
    out.names.push_back(child);
    absl::StatusOr<NodeFacts> node = facts.Lstat(child);
    if (!node.ok()) {
      out.why = std::string(node.status().message());
      return out;
    }
    if (current_facts.type != NodeFacts::Type::kDirectory) {
      out.why = absl::StrCat(current, " is not a folder");
      return out;
    }
    if (std::string why = FolderReason(current, current_facts, child, *node); !why.empty()) {
      out.why = std::move(why);
      return out;
    }
    if (node->type == NodeFacts::Type::kSymlink) {
      if (std::string why = FilesystemReason(child, *node); !why.empty()) {
        out.why = std::move(why);
        return out;
      }
      if (++hops > kMaxLinkHops) {
        out.why = absl::StrCat(path, " goes through more than ", kMaxLinkHops, " links");
        return out;
      }
      absl::StatusOr<std::string> target = facts.ReadLink(child);
      if (!target.ok()) {
        out.why = std::string(target.status().message());
        return out;
      }
      if (target->empty()) {
        out.why = absl::StrCat("the link ", child, " is empty");
        return out;
      }
      std::vector<std::string> parts = absl::StrSplit(*target, '/', absl::SkipEmpty());
      pending.insert(pending.begin(), parts.begin(), parts.end());
      if (target->front() == '/') {
        current = "/";
        current_facts = *root;
      }
      continue;
    }
    current = child;
    current_facts = *node;
  }
  out.resolved = current;
  out.facts = current_facts;
  out.why = LastReason(current, current_facts);
  return out;
}

ProgramCheck::ProgramCheck(const PathFacts& facts, const std::set<std::string>& logged_interpreters,
                           const std::vector<std::string>& programs,
                           const std::vector<std::string>& system_folders)
    : facts_(facts) {
  std::set<std::string> loaders = logged_interpreters;
  const auto add_interpreter_of = [&](const std::string& program) {
    absl::StatusOr<std::string> interpreter = facts.ElfInterpreter(program);
    if (interpreter.ok() && !interpreter->empty()) loaders.insert(*interpreter);
  };
  for (const std::string& program : programs) add_interpreter_of(program);
  for (const std::string& folder : system_folders) {
    // A link to another of them (/bin -> usr/bin on a merged-/usr host) is read once, there.
    absl::StatusOr<NodeFacts> folder_facts = facts.Lstat(folder);
    if (!folder_facts.ok() || folder_facts->type != NodeFacts::Type::kDirectory) continue;
    absl::StatusOr<std::vector<std::string>> names = facts.ListFolder(folder);
    if (!names.ok()) continue;  // a host without that folder
    for (const std::string& name : *names) {
      absl::StatusOr<NodeFacts> node = facts.Lstat(name);
      if (node.ok() && node->type == NodeFacts::Type::kFile) add_interpreter_of(name);
    }
  }
  for (const std::string& loader : loaders) {
    loader_paths_.insert(loader);
    // Its identity, reached however it may be: the file itself is the loader whatever names it.
    const Resolution resolution = ResolveRootOnly(facts, loader);
    if (resolution.resolved.empty()) continue;
    loader_paths_.insert(resolution.resolved);
    loader_files_.emplace(resolution.facts.dev, resolution.facts.ino);
  }
}

std::string ProgramCheck::WhyNotSuggested(absl::string_view binary) const {
  constexpr absl::string_view kLoader =
      "the ELF loader, which runs any program handed to it (`ld.so /usr/bin/curl` runs curl); "
      "it is allowed with each allowed program as part of that exec, never as a command";
  if (binary.empty() || binary.front() != '/') {
    return "not an absolute path: the watcher logs a program by its full path, and a bare name "
           "would stand for whichever program of that name a PATH finds; add a name entry by "
           "hand if that is meant";
  }
  if (loader_paths_.count(std::string(binary))) return std::string(kLoader);
  const Resolution resolution = ResolveRootOnly(facts_, binary);
  for (const std::string& name : resolution.names) {
    const size_t slash = name.rfind('/');
    if (IsLoaderName(absl::string_view(name).substr(slash + 1)) || loader_paths_.count(name)) {
      return std::string(kLoader);
    }
  }
  if (!resolution.resolved.empty() &&
      (loader_paths_.count(resolution.resolved) ||
       loader_files_.count({resolution.facts.dev, resolution.facts.ino}))) {
    return std::string(kLoader);
  }
  if (!resolution.why.empty()) {
    return absl::StrCat(
        "an entry matches whatever file is at its path, and the agent (or another account but "
        "root) could put its own there: ",
        resolution.why);
  }
  if (resolution.facts.type != NodeFacts::Type::kFile) {
    return absl::StrCat(resolution.resolved, " is not a regular file");
  }
  return "";
}

}  // namespace leash::cli
