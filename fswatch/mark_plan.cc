#include "fswatch/mark_plan.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "engine/path_entry.h"
#include "engine/subordinate_ids.h"

namespace leash::fswatch {
namespace {

using leash::v1::MODE_BLACKLIST;

bool NeverMarked(const MountEntry& mount, std::string& why) {
  if (mount.fstype == "proc") {
    why = "procfs is never marked: the event loop reads /proc and must never wait on itself";
    return true;
  }
  if (mount.fstype == "autofs") {
    why = "autofs is a trigger; the filesystem it mounts is marked when it appears";
    return true;
  }
  return false;
}

// The literal directory part of a path entry: the entry itself for a prefix, the components
// before the first one with a glob character for a glob.
std::string LiteralPart(const std::string& entry) {
  absl::StatusOr<engine::PathEntry> parsed = engine::ParsePathEntry(entry);
  if (!parsed.ok()) return "";
  if (parsed->kind == engine::PathEntry::Kind::kPrefix) return parsed->path;
  const std::string& path = parsed->path;
  const size_t meta = path.find_first_of("*?[");
  const size_t slash = path.rfind('/', meta);
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

bool PathIsAtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return !path.empty() && path.front() == '/';
  if (path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

MarkPlan PlanMarks(const policystream::SubjectMap& map, const std::vector<MountEntry>& mounts,
                   const MarkOptions& options) {
  MarkPlan plan;
  std::set<std::string> wanted_paths;
  for (const auto& [uid, entry] : map) {
    if (entry.policy == nullptr) {
      plan.every_filesystem = true;
      continue;
    }
    const leash::v1::Config& config = entry.policy->config();
    if (!config.enforcers().filesystem()) continue;
    if (config.filesystem().mode() != MODE_BLACKLIST ||
        config.commands().mode() != MODE_BLACKLIST) {
      plan.every_filesystem = true;
      continue;
    }
    for (const std::string& deny : config.filesystem().deny().entries()) {
      const std::string literal = LiteralPart(deny);
      if (!literal.empty()) wanted_paths.insert(literal);
    }
    for (const std::string& deny : config.commands().deny().entries()) {
      absl::StatusOr<engine::CommandEntry> parsed = engine::ParseCommandEntry(deny);
      if (!parsed.ok()) continue;
      if (!parsed->is_path) {
        plan.every_filesystem = true;
        break;
      }
      wanted_paths.insert(parsed->value);
    }
  }

  // Filesystems wanted, by device.
  std::set<std::string> wanted_devices;
  // The filesystem of the subordinate ID files, whatever the policies: an agent's open of
  // them is held until their ranges are in force (subid_hold.h).
  std::set<std::string> subid_devices;
  if (!map.empty()) {
    for (const char* path : {engine::kSubuidPath, engine::kSubgidPath}) {
      const MountEntry* holder = nullptr;
      for (const MountEntry& mount : mounts) {
        if (!PathIsAtOrUnder(path, mount.mount_point)) continue;
        if (holder == nullptr || mount.mount_point.size() >= holder->mount_point.size()) {
          holder = &mount;
        }
      }
      if (holder != nullptr) subid_devices.insert(holder->device);
    }
    wanted_devices.insert(subid_devices.begin(), subid_devices.end());
  }
  if (plan.every_filesystem) {
    for (const MountEntry& mount : mounts) wanted_devices.insert(mount.device);
  } else {
    for (const std::string& path : wanted_paths) {
      // The mount that holds `path`: the longest mount point above it (the last one listed
      // wins among equals, as it is mounted on top).
      const MountEntry* holder = nullptr;
      for (const MountEntry& mount : mounts) {
        if (!PathIsAtOrUnder(path, mount.mount_point)) continue;
        if (holder == nullptr || mount.mount_point.size() >= holder->mount_point.size()) {
          holder = &mount;
        }
      }
      if (holder != nullptr) wanted_devices.insert(holder->device);
      // And everything mounted below it, which the entry covers too.
      for (const MountEntry& mount : mounts) {
        if (PathIsAtOrUnder(mount.mount_point, path)) wanted_devices.insert(mount.device);
      }
    }
  }

  std::string root_device;
  for (const MountEntry& mount : mounts) {
    if (mount.mount_point == "/") root_device = mount.device;
  }
  for (const std::string& device : wanted_devices) {
    const MountEntry* first = nullptr;
    bool all_under = true;
    std::string why;
    for (const MountEntry& mount : mounts) {
      if (mount.device != device) continue;
      if (first == nullptr) first = &mount;
      if (why.empty()) NeverMarked(mount, why);
      if (!options.only_under.empty() && !PathIsAtOrUnder(mount.mount_point, options.only_under)) {
        all_under = false;
      }
    }
    if (first == nullptr) continue;
    const std::string name = absl::StrCat(first->mount_point, " (", first->fstype, ", ", device, ")");
    if (!why.empty()) {
      plan.excluded.push_back(absl::StrCat(name, ": ", why));
      continue;
    }
    // Under only_under the subordinate ID files' filesystem is marked too unless it is the
    // root's: a test's private /etc (an overlay in its own mount namespace) is seen only there.
    const bool private_subid_fs = subid_devices.count(device) > 0 && device != root_device;
    if (!options.only_under.empty() && (!all_under || device == root_device) &&
        !private_subid_fs) {
      plan.excluded.push_back(
          absl::StrCat(name, ": has a mount outside --mark-only-under=", options.only_under));
      continue;
    }
    plan.marks[device] = first->mount_point;
  }
  return plan;
}

}  // namespace leash::fswatch
