// Entries that can never match, found by the grammar beside each matcher. Walks any tier: the
// floor, a profile fragment or a resolved policy. The rule is asymmetric: on write such an
// entry is refused; on load it is accepted and reported (refusing at load would deny everything
// to every subject bound to the profile over an entry that, in an allow list, already fails
// closed on its own).
#pragma once

#include <vector>

#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

// Every inert entry in `config`, in field order (network.allow, network.deny,
// network.dns_resolvers, filesystem.*, commands.*, tools.*), each with its reason.
std::vector<leash::v1::InertEntry> InertEntries(const leash::v1::Config& config);

// Whether the field an inert entry sits in makes it weaken the policy (a deny list: it blocks
// nothing). Such an entry is critical; an inert allow entry is a warning.
bool IsInertDeny(const leash::v1::InertEntry& entry);

}  // namespace leash::engine
