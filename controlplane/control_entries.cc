// Control.RemoveEntry and Control.ListEntries: `leash <surface> remove <entry>` and `leash
// <surface> list`. A removal is a floor edit like AddEntry (one at a time, written in the
// operator's text so comments and layout stay) and is judged like every write by the engine's
// consent check (engine/removal_consent.h): removing a deny loosens every subject on the host
// and needs its --ack.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controlplane/control_service.h"
#include "controlplane/floor_file.h"
#include "engine/config_defaults.h"
#include "engine/config_yaml.h"
#include "engine/decision.h"

namespace leash::controlplane {
namespace {

constexpr leash::v1::Surface kSurfaces[] = {leash::v1::SURFACE_NETWORK,
                                            leash::v1::SURFACE_FILESYSTEM,
                                            leash::v1::SURFACE_COMMANDS, leash::v1::SURFACE_TOOLS};

// The lists a removal looks in: the one asked for, or both.
std::vector<bool> ListsOf(leash::v1::ListKind kind) {
  if (kind == leash::v1::LIST_KIND_ALLOW) return {true};
  if (kind == leash::v1::LIST_KIND_DENY) return {false};
  return {true, false};
}

const char* ListName(bool allow) { return allow ? "allow" : "deny"; }

// The library's names in order (it is a hash map), so every answer lists them the same way.
std::vector<std::string> SortedNames(const engine::ProfileLibrary& profiles) {
  std::vector<std::string> names;
  for (const auto& [name, fragment] : profiles) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

grpc::Status ControlService::RemoveEntry(grpc::ServerContext* context,
                                         const leash::v1::RemoveEntryRequest* r,
                                         leash::v1::PolicyWriteResponse* response) {
  const absl::string_view surface = engine::SurfaceName(r->surface());
  if (surface == "unknown") return ToGrpc(absl::InvalidArgumentError("unknown surface"));
  const std::vector<bool> lists = ListsOf(r->list());
  const std::vector<std::string> acks(r->acks().begin(), r->acks().end());
  FloorConsent consent{Caller(context, r->who())};
  std::vector<bool> removed_from;
  grpc::Status status = EditFloor(
      absl::StrCat(surface, " remove ", r->entry()),
      [&](leash::v1::Config& floor, leash::v1::Refusal& refusal) -> absl::StatusOr<bool> {
        const leash::v1::Config before = floor;
        std::vector<std::string> fields;
        for (const bool allow : lists) {
          absl::StatusOr<bool> removed = RemoveFloorEntry(floor, r->surface(), allow, r->entry());
          if (!removed.ok()) return removed.status();
          if (*removed) {
            removed_from.push_back(allow);
            fields.push_back(absl::StrCat(surface, ".", ListName(allow)));
          }
        }
        if (removed_from.empty()) return NotInTheFloor(r->surface(), lists, r->entry());
        const std::string what = absl::StrCat("removing '", r->entry(), "' from the floor's ",
                                              absl::StrJoin(fields, " and "));
        std::vector<std::string> words = {"sudo", "leash", std::string(surface), "remove",
                                          r->entry()};
        // On a refusal the edit stays made in `floor`: EditFloor judges what the re-run line
        // would write.
        JudgeFloorChange(before, floor, what, words, acks, refusal, consent);
        return true;
      },
      [&](absl::string_view text) -> absl::StatusOr<std::string> {
        std::string edited(text);
        for (const bool allow : removed_from) {
          absl::StatusOr<std::string> next =
              PatchFloorRemoveEntry(edited, r->surface(), allow, r->entry());
          if (!next.ok()) return next.status();
          edited = *std::move(next);
        }
        return edited;
      },
      consent, r->no_reconcile(), response);
  return status;
}

absl::Status ControlService::NotInTheFloor(leash::v1::Surface surface,
                                           const std::vector<bool>& lists,
                                           const std::string& entry) const {
  const absl::string_view name = engine::SurfaceName(surface);
  std::vector<std::string> where;
  absl::StatusOr<Snapshot> snapshot = deps_.store->ReadSnapshot();
  if (snapshot.ok()) {
    for (const std::string& profile : SortedNames(snapshot->profiles)) {
      const absl::StatusOr<leash::v1::Config>& fragment = snapshot->profiles.at(profile);
      if (!fragment.ok()) continue;
      for (const bool allow : lists) {
        const std::vector<std::string> entries = FloorEntries(*fragment, surface, allow);
        if (std::find(entries.begin(), entries.end(), entry) != entries.end()) {
          where.push_back(absl::StrCat("profile '", profile, "' (", name, ".", ListName(allow),
                                       ", ", deps_.store->profiles().PathFor(profile), ")"));
        }
      }
    }
  }
  std::string message = absl::StrCat(
      "the floor (", deps_.config_path, ") has no ", name, ".",
      lists.size() == 1 ? ListName(lists.front()) : "allow or deny", " entry '", entry,
      "' (leash ", name, " list shows them)");
  if (!where.empty()) {
    absl::StrAppend(&message, "; it is written in ", absl::StrJoin(where, ", "),
                    ": edit that file and save it with sudo leash profile save <name> --from "
                    "<file>");
  }
  return absl::NotFoundError(message);
}

grpc::Status ControlService::ListEntries(grpc::ServerContext*,
                                         const leash::v1::ListEntriesRequest* r,
                                         leash::v1::ListEntriesResponse* response) {
  std::vector<leash::v1::Surface> surfaces;
  if (r->surface() == leash::v1::SURFACE_UNSPECIFIED) {
    surfaces.assign(std::begin(kSurfaces), std::end(kSurfaces));
  } else if (engine::SurfaceName(r->surface()) == "unknown") {
    return ToGrpc(absl::InvalidArgumentError("unknown surface"));
  } else {
    surfaces.push_back(r->surface());
  }
  absl::StatusOr<leash::v1::Config> floor = LoadFloor(deps_.config_path);
  if (!floor.ok()) return ToGrpc(floor.status());
  absl::StatusOr<Snapshot> snapshot = deps_.store->ReadSnapshot();
  if (!snapshot.ok()) return ToGrpc(snapshot.status());
  const leash::v1::Config effective = engine::WithDefaults(*floor);

  auto add = [&](const leash::v1::Config& config, leash::v1::Surface surface,
                 const std::string& source, const std::string& file,
                 const std::vector<std::string>& bound_to) {
    for (const bool allow : {true, false}) {
      for (const std::string& entry : FloorEntries(config, surface, allow)) {
        leash::v1::ListedEntry& out = *response->add_entries();
        out.set_surface(std::string(engine::SurfaceName(surface)));
        out.set_list(ListName(allow));
        out.set_entry(entry);
        out.set_source(source);
        out.set_file(file);
        for (const std::string& scope : bound_to) out.add_bound_to(scope);
      }
    }
  };
  for (const leash::v1::Surface surface : surfaces) {
    const std::string name(engine::SurfaceName(surface));
    leash::v1::Mode mode = leash::v1::MODE_UNSPECIFIED;
    switch (surface) {
      case leash::v1::SURFACE_NETWORK: mode = effective.network().mode(); break;
      case leash::v1::SURFACE_FILESYSTEM: mode = effective.filesystem().mode(); break;
      case leash::v1::SURFACE_COMMANDS: mode = effective.commands().mode(); break;
      case leash::v1::SURFACE_TOOLS: mode = effective.tools().mode(); break;
      default: break;
    }
    (*response->mutable_floor_modes())[name] = std::string(engine::ModeName(mode));
    add(*floor, surface, "floor", deps_.config_path, {});
  }
  for (const std::string& profile : SortedNames(snapshot->profiles)) {
    const absl::StatusOr<leash::v1::Config>& fragment = snapshot->profiles.at(profile);
    if (!fragment.ok()) {
      (*response->mutable_unreadable_profiles())[profile] =
          std::string(fragment.status().message());
      continue;
    }
    std::vector<std::string> bound_to;
    for (const engine::Binding* binding : snapshot->bindings.NamingProfile(profile)) {
      bound_to.push_back(binding->scope);
    }
    for (const leash::v1::Surface surface : surfaces) {
      add(*fragment, surface, absl::StrCat("profile:", profile),
          deps_.store->profiles().PathFor(profile), bound_to);
    }
  }
  return grpc::Status::OK;
}

}  // namespace leash::controlplane
