#include "controlplane/floor_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "controlplane/atomic_file.h"
#include "engine/config_yaml.h"
#include "engine/decision.h"
#include "engine/inert_entries.h"

namespace leash::controlplane {
namespace {

leash::v1::EntryList* ListOf(leash::v1::Config& config, leash::v1::Surface surface, bool allow) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return allow ? config.mutable_network()->mutable_allow()
                   : config.mutable_network()->mutable_deny();
    case leash::v1::SURFACE_FILESYSTEM:
      return allow ? config.mutable_filesystem()->mutable_allow()
                   : config.mutable_filesystem()->mutable_deny();
    case leash::v1::SURFACE_COMMANDS:
      return allow ? config.mutable_commands()->mutable_allow()
                   : config.mutable_commands()->mutable_deny();
    case leash::v1::SURFACE_TOOLS:
      return allow ? config.mutable_tools()->mutable_allow() : config.mutable_tools()->mutable_deny();
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<leash::v1::Config> LoadFloor(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat(
        "the config ", path, " does not exist; create it with `leash init --user <name>`"));
  }
  if (!text.ok()) return text.status();
  return engine::ParseConfigYaml(*text, engine::ConfigKind::kFloor, path);
}

absl::Status RestateFloorPermissions(const std::string& path, gid_t gid) {
  if (chown(path.c_str(), 0, gid) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chown root:", gid, " ", path));
  }
  if (chmod(path.c_str(), 0640) != 0) return absl::ErrnoToStatus(errno, "chmod 0640 " + path);
  return absl::OkStatus();
}

absl::Status WriteFloor(const std::string& path, const leash::v1::Config& config, gid_t gid) {
  const std::string text = absl::StrCat(
      "# Leash floor policy. Written by leash; edit with `leash <surface> allow|deny|mode` or by\n"
      "# hand, then `leash validate`. Mode 0640 root:<leashed user> is re-stated on every write.\n",
      engine::EmitConfigYaml(config));
  absl::Status written = WriteFileAtomically(path, text, 0640);
  if (!written.ok()) return written;
  return RestateFloorPermissions(path, gid);
}

absl::StatusOr<bool> AddFloorEntry(leash::v1::Config& config, leash::v1::Surface surface,
                                   bool allow, absl::string_view entry,
                                   leash::v1::InertEntry* inert) {
  // Judge the entry exactly as InertEntries would judge it in place.
  leash::v1::Config probe;
  leash::v1::EntryList* probe_list = ListOf(probe, surface, allow);
  if (probe_list == nullptr) return absl::InvalidArgumentError("unknown surface");
  probe_list->add_entries(std::string(entry));
  std::vector<leash::v1::InertEntry> problems = engine::InertEntries(probe);
  if (!problems.empty()) {
    if (inert != nullptr) *inert = problems.front();
    return absl::InvalidArgumentError(absl::StrCat(problems.front().field(), " entry '", entry,
                                                   "' can never match: ",
                                                   problems.front().reason()));
  }
  leash::v1::EntryList* list = ListOf(config, surface, allow);
  for (const std::string& existing : list->entries()) {
    if (existing == entry) return false;
  }
  list->add_entries(std::string(entry));
  return true;
}

bool SetFloorMode(leash::v1::Config& config, leash::v1::Surface surface, leash::v1::Mode mode) {
  auto set = [mode](auto* policy) {
    if (policy->has_mode() && policy->mode() == mode) return false;
    policy->set_mode(mode);
    return true;
  };
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return set(config.mutable_network());
    case leash::v1::SURFACE_FILESYSTEM:
      return set(config.mutable_filesystem());
    case leash::v1::SURFACE_COMMANDS:
      return set(config.mutable_commands());
    case leash::v1::SURFACE_TOOLS:
      return set(config.mutable_tools());
    default:
      return false;
  }
}

}  // namespace leash::controlplane
