// Whose host UIDs are whose: each subject's own UID and the subordinate ranges it holds
// (/etc/subuid), made disjoint before they reach nftables' interval map, the proxy and the
// watcher, and every overlap said rather than guessed at.
//
//  - A subject's own UID is always its own.
//  - Ranges that overlap another subject's UID or ranges deny every subject concerned (each
//    could act as the other inside a user namespace); the overlapping IDs go to one of them
//    (the subject whose own UID it is, else the lowest UID), so both stay denied on every
//    surface and the kernel's map never holds two claims on one UID.
//  - Ranges that hold the UID of an account Leash does not confine deny the subject: inside its
//    own user namespace it could act as that account. That UID is left out of the subject's
//    set: Leash never confines an account that is not a subject.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "controlplane/account_source.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

struct SubordinatePlan {
  // Per subject UID: the subordinate ranges that are its (merged, disjoint across subjects).
  std::map<uint32_t, std::vector<engine::UidRange>> ranges;
  // Per subject UID: why it is denied, when it is (one sentence per overlap).
  std::map<uint32_t, std::vector<std::string>> conflicts;
};

// `subjects`: every subject of the pass (its account, with subordinate_uids). `fixed`: ranges
// already in force for subjects whose chain is kept as it is (left discovery), taken first.
// `accounts_in_ranges`: every account whose UID lies in some subject's ranges
// (AccountSource::AccountsWithUidIn); those that are subjects are judged as subjects.
SubordinatePlan PlanSubordinateUids(
    const std::vector<Account>& subjects,
    const std::map<uint32_t, std::vector<engine::UidRange>>& fixed,
    const std::vector<Account>& accounts_in_ranges);

// Subordinate GIDs (/etc/subgid, through newgidmap) give an agent's processes host GIDs, so
// every file of those groups: a range holding a host group's GID (`docker`, `shadow`) or another
// subject's GIDs would hand the agent that group's files and sockets, which no surface judges by
// GID (a Unix socket raises no fanotify event). Per subject UID, why it is denied: a range
// holding the GID of any group in `groups_in_ranges` other than its own primary group, or
// overlapping another subject's subordinate GIDs or primary GID. Nothing is left out here: the
// subject is denied until /etc/subgid is fixed.
std::map<uint32_t, std::vector<std::string>> SubordinateGidConflicts(
    const std::vector<Account>& subjects, const std::vector<Group>& groups_in_ranges);

}  // namespace leash::controlplane
