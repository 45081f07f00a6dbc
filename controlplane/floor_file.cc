#include "controlplane/floor_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "google/protobuf/util/message_differencer.h"
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

// The floor's top-level key for a surface's policy ("" for none).
absl::string_view SectionOf(leash::v1::Surface surface) {
  const absl::string_view name = engine::SurfaceName(surface);
  return name == "unknown" ? "" : name;
}

}  // namespace

absl::StatusOr<leash::v1::Config> LoadFloor(const std::string& path) {
  absl::StatusOr<FloorText> floor = LoadFloorText(path);
  if (!floor.ok()) return floor.status();
  return std::move(floor->config);
}

absl::StatusOr<FloorText> LoadFloorText(const std::string& path) {
  // Over the cap it is not even read: its size is enough to refuse it.
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (absl::Status size = engine::CheckPolicyYamlSize(static_cast<size_t>(st.st_size), path);
        !size.ok()) {
      return size;
    }
  }
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat(
        "the config ", path, " does not exist; create it with `leash init --user <name>`"));
  }
  if (!text.ok()) return text.status();
  absl::StatusOr<leash::v1::Config> config =
      engine::ParseConfigYaml(*text, engine::ConfigKind::kFloor, path);
  if (!config.ok()) return config.status();
  return FloorText{*std::move(text), *std::move(config)};
}

absl::StatusOr<std::string> PatchFloorEntry(absl::string_view text, leash::v1::Surface surface,
                                            bool allow, absl::string_view entry) {
  const absl::string_view section = SectionOf(surface);
  if (section.empty()) return absl::InvalidArgumentError("unknown surface");
  return engine::AppendToYamlList(text, section, allow ? "allow" : "deny", entry);
}

absl::StatusOr<std::string> PatchFloorRemoveEntry(absl::string_view text,
                                                  leash::v1::Surface surface, bool allow,
                                                  absl::string_view entry) {
  const absl::string_view section = SectionOf(surface);
  if (section.empty()) return absl::InvalidArgumentError("unknown surface");
  return engine::RemoveFromYamlList(text, section, allow ? "allow" : "deny", entry);
}

absl::StatusOr<std::string> PatchFloorMode(absl::string_view text, leash::v1::Surface surface,
                                           leash::v1::Mode mode) {
  const absl::string_view section = SectionOf(surface);
  if (section.empty()) return absl::InvalidArgumentError("unknown surface");
  return engine::SetYamlScalar(text, section, "mode", engine::ModeName(mode));
}

absl::StatusOr<FloorWrite> WriteEditedFloor(const std::string& path, const std::string& original,
                                            const absl::StatusOr<std::string>& patched,
                                            const leash::v1::Config& edited, uid_t owner,
                                            gid_t gid) {
  // The patched text is kept only if it reads back to exactly the Config the edit meant.
  std::string why_not;
  if (!patched.ok()) {
    why_not = std::string(patched.status().message());
  } else {
    absl::StatusOr<leash::v1::Config> reread =
        engine::ParseConfigYaml(*patched, engine::ConfigKind::kFloor, path);
    if (!reread.ok()) {
      why_not = absl::StrCat("the edited text did not read back: ", reread.status().message());
    } else if (!google::protobuf::util::MessageDifferencer::Equals(*reread, edited)) {
      why_not = "the edited text did not read back to the edited policy";
    }
  }
  if (why_not.empty()) {
    if (absl::Status written = base::WriteFileAtomically(path, *patched, 0640); !written.ok()) {
      return written;
    }
    if (absl::Status owned = RestateFloorPermissions(path, owner, gid); !owned.ok()) return owned;
    return FloorWrite{true, ""};
  }
  // Rewritten whole: the text as it was goes aside first, comments and all.
  const std::string aside = path + ".before-edit";
  if (absl::Status saved = base::WriteFileAtomically(aside, original, 0640); !saved.ok()) return saved;
  if (absl::Status owned = RestateFloorPermissions(aside, owner, gid); !owned.ok()) return owned;
  if (absl::Status written = WriteFloor(path, edited, owner, gid); !written.ok()) return written;
  return FloorWrite{false, absl::StrCat(path, " was rewritten whole, without its comments and "
                                              "layout (", why_not, "); its previous text is in ",
                                        aside)};
}

absl::Status RestateFloorPermissions(const std::string& path, uid_t owner, gid_t gid) {
  if (chown(path.c_str(), owner, gid) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chown ", owner, ":", gid, " ", path));
  }
  if (chmod(path.c_str(), 0640) != 0) return absl::ErrnoToStatus(errno, "chmod 0640 " + path);
  return absl::OkStatus();
}

absl::Status WriteFloor(const std::string& path, const leash::v1::Config& config, uid_t owner,
                        gid_t gid) {
  const std::string text = absl::StrCat(
      "# Leash floor policy. Written by leash; edit with `leash <surface> allow|deny|mode` or by\n"
      "# hand, then `leash validate`. Mode 0640 root:<leashed user> is re-stated on every write.\n",
      engine::EmitConfigYaml(config));
  absl::Status written = base::WriteFileAtomically(path, text, 0640);
  if (!written.ok()) return written;
  return RestateFloorPermissions(path, owner, gid);
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

absl::StatusOr<bool> RemoveFloorEntry(leash::v1::Config& config, leash::v1::Surface surface,
                                      bool allow, absl::string_view entry) {
  if (SectionOf(surface).empty()) return absl::InvalidArgumentError("unknown surface");
  // Only a list the floor writes is touched: reading it through a mutable accessor would make an
  // absent list present, and the edit would not read back.
  if (FloorEntries(config, surface, allow).empty()) return false;
  leash::v1::EntryList* list = ListOf(config, surface, allow);
  auto* entries = list->mutable_entries();
  const auto kept = std::remove(entries->begin(), entries->end(), entry);
  if (kept == entries->end()) return false;
  entries->erase(kept, entries->end());
  return true;
}

std::vector<std::string> FloorEntries(const leash::v1::Config& config, leash::v1::Surface surface,
                                      bool allow) {
  auto of = [allow](const auto& policy) -> std::vector<std::string> {
    const leash::v1::EntryList& list = allow ? policy.allow() : policy.deny();
    return {list.entries().begin(), list.entries().end()};
  };
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return of(config.network());
    case leash::v1::SURFACE_FILESYSTEM:
      return of(config.filesystem());
    case leash::v1::SURFACE_COMMANDS:
      return of(config.commands());
    case leash::v1::SURFACE_TOOLS:
      return of(config.tools());
    default:
      return {};
  }
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
