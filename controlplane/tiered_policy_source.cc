#include "controlplane/tiered_policy_source.h"

#include "absl/strings/str_cat.h"
#include "controlplane/floor_file.h"
#include "engine/tiers.h"

namespace leash::controlplane {
namespace {

class TieredSnapshot : public PolicySnapshot {
 public:
  TieredSnapshot(leash::v1::Config floor, Snapshot tiers)
      : floor_(std::move(floor)),
        tiers_(std::move(tiers)),
        resolver_(floor_, tiers_.bindings, tiers_.profiles) {}

  const leash::v1::Config& floor() const override { return floor_; }

  Resolution Resolve(const Account& account, bool configured_user) const override {
    engine::ResolvedSubject resolved = configured_user ? resolver_.ResolveConfiguredUser()
                                                       : resolver_.ResolveAgent(account.name);
    Resolution out;
    for (size_t i = 0; i < resolved.scopes.size() && i < resolved.profiles.size(); ++i) {
      out.sources.push_back(absl::StrCat(resolved.scopes[i], "=", resolved.profiles[i]));
    }
    if (resolved.ok()) {
      out.policy = *std::move(resolved.policy);
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
  return std::unique_ptr<PolicySnapshot>(new TieredSnapshot(*std::move(floor), *std::move(tiers)));
}

}  // namespace leash::controlplane
