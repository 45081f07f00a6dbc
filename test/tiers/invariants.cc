#include "test/tiers/invariants.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/consent.h"
#include "engine/scope.h"
#include "engine/tiers.h"

namespace leash::tiers_testing {

std::vector<std::string> ConsentViolations(const std::string& state_dir,
                                           const controlplane::HostInputs& host) {
  controlplane::BindingStore store(controlplane::BindingStore::Options{state_dir});
  absl::StatusOr<controlplane::Snapshot> snapshot = store.ReadSnapshot();
  if (!snapshot.ok()) return {absl::StrCat("state unreadable: ", snapshot.status().message())};
  std::vector<std::string> out;
  const engine::Resolver resolver(*host.floor, snapshot->bindings, snapshot->profiles);
  for (const engine::Binding& binding : snapshot->bindings.entries()) {
    absl::StatusOr<engine::Scope> scope = engine::ParseScope(binding.scope);
    if (!scope.ok()) continue;
    auto profile = snapshot->profiles.find(binding.profile);
    if (profile == snapshot->profiles.end() || !profile->second.ok()) continue;  // fail-closed
    std::vector<engine::FieldChange> missing = engine::Unacknowledged(
        engine::BindingLoosenings(resolver, *scope, *profile->second), binding.acks);
    for (const engine::FieldChange& change : missing) {
      out.push_back(absl::StrCat(binding.scope, " bound to '", binding.profile,
                                 "' is loosened without consent: ", change.ack_token));
    }
    if (!scope->is_global()) {
      engine::ResolvedSubject subject = resolver.ResolveAgent(scope->account);
      if (!subject.ok() &&
          subject.failure->kind == engine::ResolveFailure::Kind::kUnacknowledgedLoosening) {
        out.push_back(absl::StrCat("run start refuses ", binding.scope, ": ",
                                   subject.failure->message));
      }
    }
  }
  return out;
}

}  // namespace leash::tiers_testing
