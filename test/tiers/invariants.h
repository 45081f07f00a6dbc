// What must hold of the policy state on disk at every instant, whatever a writer was doing
// when it died or raced: "never a loosened profile beside agents that have not consented".
// Shared by the crash-consistency and concurrency tests. Test-only.
#pragma once

#include <string>
#include <vector>

#include "controlplane/policy_store.h"

namespace leash::tiers_testing {

// Reads the state under `state_dir` (shared lock) and returns one line per binding whose
// subject would be loosened beyond its acks — judged as a write would judge it (against the
// floor, and the folded base) and as run start would (the resolver). Empty when the state is
// consistent. A state that cannot be read is a violation too.
std::vector<std::string> ConsentViolations(const std::string& state_dir,
                                           const controlplane::HostInputs& host);

}  // namespace leash::tiers_testing
