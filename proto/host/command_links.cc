#include "proto/host/command_links.h"

#include <linux/limits.h>
#include <stdlib.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/check_subject.h"
#include "engine/path_entry.h"

namespace leash::host {
namespace {

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The folder a name lives in: only root may add, remove or rename names there.
bool RootOnlyFolder(const std::string& path) {
  struct stat folder;
  return stat(FolderOf(path).c_str(), &folder) == 0 && S_ISDIR(folder.st_mode) &&
         engine::RootOnlyWritable(folder.st_uid, folder.st_mode);
}

// The target of the link chain starting at `path`, when every link on the way and the target
// are root-controlled; empty otherwise, and when `path` is not a link.
std::string TrustedTarget(std::string path) {
  bool linked = false;
  for (int hop = 0; hop <= 8; ++hop) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return "";
    if (!RootOnlyFolder(path) || st.st_uid != 0) return "";
    if (!S_ISLNK(st.st_mode)) {
      if (!linked || !S_ISREG(st.st_mode) || !engine::RootOnlyWritable(st.st_uid, st.st_mode)) {
        return "";
      }
      char real[PATH_MAX];
      if (realpath(path.c_str(), real) == nullptr) return "";
      return real;
    }
    char target[PATH_MAX];
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) return "";
    target[n] = '\0';
    path = target[0] == '/' ? std::string(target) : absl::StrCat(FolderOf(path), "/", target);
    linked = true;
  }
  return "";  // a chain longer than the kernel follows
}

}  // namespace

std::vector<engine::CommandLink> ResolveCommandLinks(const leash::v1::Config& config,
                                                     absl::Span<const std::string> search_path) {
  std::set<std::string> names;
  for (const leash::v1::EntryList* list :
       {&config.commands().allow(), &config.commands().deny()}) {
    for (const std::string& raw : list->entries()) {
      absl::StatusOr<engine::CommandEntry> entry = engine::ParseCommandEntry(raw);
      if (entry.ok() && !entry->is_path) names.insert(entry->value);
    }
  }
  std::vector<engine::CommandLink> links;
  for (const std::string& name : names) {
    for (const std::string& folder : search_path) {
      const std::string candidate = absl::StrCat(folder, "/", name);
      struct stat st;
      if (lstat(candidate.c_str(), &st) != 0) continue;
      // The first hit is what a shell would run; only a link adds anything.
      std::string target = TrustedTarget(candidate);
      if (!target.empty()) links.push_back({name, std::move(target)});
      break;
    }
  }
  return links;
}

namespace {

// As the watcher judges an exec's program (fswatch/exec_facts.h, RootControlledProgram): a
// regular file only root can change, in a folder only root can write, on a filesystem whose
// owners are not made up by a FUSE server.
engine::ProgramOrigin OriginOf(const std::string& program) {
  struct stat st;
  struct statfs fs;
  if (stat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      !engine::RootOnlyWritable(st.st_uid, st.st_mode) || !RootOnlyFolder(program) ||
      statfs(program.c_str(), &fs) != 0 || static_cast<uint64_t>(fs.f_type) == FUSE_SUPER_MAGIC) {
    return engine::ProgramOrigin::kOther;
  }
  return engine::ProgramOrigin::kRootControlled;
}

}  // namespace

std::optional<SystemProgram> FindOnSearchPath(absl::string_view name,
                                              absl::Span<const std::string> search_path) {
  if (name.empty() || name.find('/') != absl::string_view::npos) return std::nullopt;
  for (const std::string& folder : search_path) {
    const std::string candidate = absl::StrCat(folder, "/", name);
    struct stat st;
    // execvp goes on past a name that is missing or cannot be executed, and runs the first
    // that can.
    if (stat(candidate.c_str(), &st) != 0 || S_ISDIR(st.st_mode) ||
        access(candidate.c_str(), X_OK) != 0) {
      continue;
    }
    char real[PATH_MAX];
    if (realpath(candidate.c_str(), real) == nullptr) continue;
    return SystemProgram{candidate, real, OriginOf(real)};
  }
  return std::nullopt;
}

absl::StatusOr<engine::Decision> DecideCheckSubject(const engine::CompiledPolicy& policy,
                                                    engine::Surface surface,
                                                    absl::string_view subject,
                                                    std::string& resolved,
                                                    absl::Span<const std::string> search_path) {
  resolved.clear();
  if (surface != leash::v1::SURFACE_COMMANDS || subject.empty() ||
      subject.find('/') != absl::string_view::npos) {
    return engine::DecideText(policy, surface, subject);
  }
  std::optional<SystemProgram> found = FindOnSearchPath(subject, search_path);
  if (!found) {
    resolved = absl::StrCat(subject, " is not on the system PATH (", absl::StrJoin(search_path, ":"),
                            "): judged by its name only");
    return engine::DecideText(policy, surface, subject);
  }
  resolved = found->found == found->program
                 ? absl::StrCat(subject, " is ", found->program, " on the system PATH")
                 : absl::StrCat(subject, " is ", found->found, " on the system PATH, which is ",
                                found->program);
  if (found->origin != engine::ProgramOrigin::kRootControlled) {
    absl::StrAppend(&resolved, " (not root-controlled: a name allow entry does not cover it)");
  }
  return policy.DecideCommand(found->program, found->origin);
}

}  // namespace leash::host
