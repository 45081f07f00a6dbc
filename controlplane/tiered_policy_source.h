// The PolicySource leashd runs with: the floor file, then bindings and profiles from the
// BindingStore, resolved per subject by the engine's tier Resolver (global < agent), then the
// named lists the resolved policy uses expanded from the lists folder beside the floor
// (proto/host/list_files.h). Lists are re-read on every Load, so an edit of one is picked up
// by the next reconcile, and an edit is said (Notes) against what the previous Load read.
#pragma once

#include <string>

#include "proto/host/list_files.h"
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
  // The lists as the previous Load read them (only Load touches it; one pass at a time).
  host::ListEntries last_lists_;
  bool loaded_once_ = false;
};

}  // namespace leash::controlplane
