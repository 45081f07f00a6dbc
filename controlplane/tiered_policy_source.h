// The PolicySource leashd runs with: the floor file, then bindings and profiles from the
// BindingStore, resolved per subject by the engine's tier Resolver (global < agent).
#pragma once

#include <string>

#include "controlplane/policy_source.h"
#include "controlplane/policy_store.h"

namespace leash::controlplane {

class TieredPolicySource : public PolicySource {
 public:
  // Neither is owned; `store` must outlive the source.
  TieredPolicySource(std::string config_path, const BindingStore* store);

  // The floor unreadable or not parsing, or bindings.yaml unreadable: an error (the pass
  // changes nothing). A profile that does not load fails only the subjects bound to it.
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> Load() override;

 private:
  const std::string config_path_;
  const BindingStore* const store_;
};

}  // namespace leash::controlplane
