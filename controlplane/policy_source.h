// What a reconcile pass resolves subjects against: the floor, the bindings and the profiles,
// read once per pass into a snapshot so every subject of the pass is judged against the same
// files. Reading can fail wholesale (the floor unreadable: nobody can be resolved, and the
// pass changes nothing); resolving fails per subject (a dangling profile, an unacknowledged
// loosening: that subject alone is denied).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controlplane/account_source.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::controlplane {

class PolicySnapshot {
 public:
  virtual ~PolicySnapshot() = default;

  // The floor as loaded (keys as written, no defaults).
  virtual const leash::v1::Config& floor() const = 0;

  struct Resolution {
    // The resolved policy with every field present, or an error whose message says why the
    // subject has none.
    absl::StatusOr<leash::v1::Config> policy;
    // The bindings it came from, for status: {"global=base", "agent:leash-iris=web"}.
    std::vector<std::string> sources;
    // With `policy`: what audit must not lift (engine::AuditAbove, rule L4), lists expanded.
    std::optional<leash::v1::Config> audit_above;
  };

  // Resolves one subject. The configured single user resolves to the (global-folded) floor with
  // no tier of its own, so no agent: binding can re-point the control plane's own confinement.
  virtual Resolution Resolve(const Account& account, bool configured_user) const = 0;

  // What the pass should say about the files it read beyond any one subject (a named list
  // that was edited since the last pass), each line starting "warning: " or "critical: ".
  virtual std::vector<std::string> Notes() const { return {}; }
};

class PolicySource {
 public:
  virtual ~PolicySource() = default;
  // Reads the floor and the tiers. An error fails the whole pass.
  virtual absl::StatusOr<std::unique_ptr<PolicySnapshot>> Load() = 0;
};

}  // namespace leash::controlplane
