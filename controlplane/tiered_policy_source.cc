#include "controlplane/tiered_policy_source.h"

#include "absl/strings/str_cat.h"
#include "controlplane/floor_file.h"
#include "engine/named_lists.h"
#include "engine/tiers.h"

namespace leash::controlplane {
namespace {

class TieredSnapshot : public PolicySnapshot {
 public:
  TieredSnapshot(leash::v1::Config floor, Snapshot tiers, engine::ListTexts lists,
                 std::vector<std::string> notes)
      : floor_(std::move(floor)),
        tiers_(std::move(tiers)),
        lists_(std::move(lists)),
        notes_(std::move(notes)),
        resolver_(floor_, tiers_.bindings, tiers_.profiles) {}

  std::vector<std::string> Notes() const override { return notes_; }

  const leash::v1::Config& floor() const override { return floor_; }

  Resolution Resolve(const Account& account, bool configured_user) const override {
    engine::ResolvedSubject resolved = configured_user ? resolver_.ResolveConfiguredUser()
                                                       : resolver_.ResolveAgent(account.name);
    Resolution out;
    for (size_t i = 0; i < resolved.scopes.size() && i < resolved.profiles.size(); ++i) {
      out.sources.push_back(absl::StrCat(resolved.scopes[i], "=", resolved.profiles[i]));
    }
    if (resolved.ok()) {
      // Consent was judged on the list references as written; the enforcers get the entries.
      absl::StatusOr<leash::v1::Config> expanded = engine::ExpandLists(*resolved.policy, lists_);
      if (expanded.ok() && resolved.audit_above) {
        // What audit keeps enforced is judged on entries too; failing to read it fails closed.
        absl::StatusOr<leash::v1::Config> above = engine::ExpandLists(*resolved.audit_above, lists_);
        if (above.ok()) {
          out.audit_above = *std::move(above);
        } else {
          expanded = above.status();
        }
      }
      if (expanded.ok()) {
        out.policy = *std::move(expanded);
      } else {
        out.policy = absl::FailedPreconditionError(
            absl::StrCat("unusable-list: ", expanded.status().message()));
      }
    } else {
      out.policy = absl::FailedPreconditionError(
          absl::StrCat(engine::ResolveFailureKindName(resolved.failure->kind), ": ",
                       resolved.failure->message));
    }
    return out;
  }

 private:
  const leash::v1::Config floor_;
  const Snapshot tiers_;
  const engine::ListTexts lists_;
  const std::vector<std::string> notes_;
  // Points into tiers_: declared after it.
  const engine::Resolver resolver_;
};

}  // namespace

TieredPolicySource::TieredPolicySource(std::string config_path, const BindingStore* store)
    : config_path_(std::move(config_path)), store_(store) {}

absl::StatusOr<std::unique_ptr<PolicySnapshot>> TieredPolicySource::Load() {
  absl::StatusOr<leash::v1::Config> floor = LoadFloor(config_path_);
  if (!floor.ok()) return floor.status();
  absl::StatusOr<Snapshot> tiers = store_->ReadSnapshot();
  if (!tiers.ok()) return tiers.status();
  // Every list the floor or any profile names; a subject only ever uses some of them.
  std::vector<const leash::v1::Config*> configs = {&*floor};
  for (const auto& [name, profile] : tiers->profiles) {
    if (profile.ok()) configs.push_back(&*profile);
  }
  engine::ListTexts lists = host::ReadListFiles(configs, host::ListFolderFor(config_path_));
  host::ListEntries entries = host::EntriesOfLists(lists);
  std::vector<std::string> notes;
  if (loaded_once_) {
    for (std::string& edit : host::DescribeListEdits(last_lists_, entries)) {
      notes.push_back(absl::StrCat("warning: ", edit));
    }
  }
  // A list that could not be read this time keeps its last entries to compare with.
  for (auto& [file, list] : entries) last_lists_[file] = std::move(list);
  loaded_once_ = true;
  return std::unique_ptr<PolicySnapshot>(new TieredSnapshot(
      *std::move(floor), *std::move(tiers), std::move(lists), std::move(notes)));
}

}  // namespace leash::controlplane
