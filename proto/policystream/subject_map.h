// The UID -> policy map an enforcer holds, as PolicyStream delivers it: plain data and the
// conversion from the wire form. Apart from the subscriber so that an enforcer's judging core
// (fswatch's watcher, the proxy's listeners) links no gRPC.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/compiled_policy.h"
#include "engine/config_defaults.h"
#include "engine/ip_address.h"
#include "engine/uid_ranges.h"
#include "leash/v1/policy_stream.pb.h"

namespace leash::policystream {

// One subject as a sidecar holds it.
struct SubjectEntry {
  uint32_t uid = 0;
  // The subordinate UID ranges that are this subject's too (a process of the agent inside its
  // own user namespace): judged and logged as `uid`. Disjoint from every other subject's.
  std::vector<engine::UidRange> subordinate_uids;
  // The subordinate UID ranges its nftables chain holds now (SubjectPolicy.
  // subordinate_uids_in_chain): a range in subordinate_uids may not be there yet.
  std::vector<engine::UidRange> subordinate_uids_in_chain;
  // The subordinate GID ranges leashd has judged for it (SubjectPolicy.subordinate_gids).
  std::vector<engine::UidRange> subordinate_gids;
  // The owner fields of /etc/subuid and /etc/subgid that are its (SubjectPolicy.subid_owners).
  std::vector<std::string> subid_owners;
  std::string account;
  uint16_t port = 0;
  // Null: the subject has no policy (left discovery, or did not resolve). The proxy refuses
  // its connections; the watcher answers its events under no_policy_fail_mode.
  std::shared_ptr<const engine::CompiledPolicy> policy;
  std::string no_policy_reason;
  engine::FailMode no_policy_fail_mode = engine::FailMode::kClosed;
  // No policy only because the subject is being brought in (NoPolicy.onboarding): denied all
  // the same, and not reported as critical.
  bool onboarding = false;
  // Where the subject's DNS goes (SubjectPolicy.dns_resolvers), in order; entries that are not
  // an address are left out.
  std::vector<engine::IpAddress> dns_resolvers;
};

// The whole map; never mutated once published. A UID absent from it is not a subject.
using SubjectMap = absl::flat_hash_map<uint32_t, SubjectEntry>;
using SubjectMapPtr = std::shared_ptr<const SubjectMap>;

// Builds a SubjectMap entry from the wire form, compiling its policy.
SubjectEntry MakeSubjectEntry(const leash::v1::SubjectPolicy& wire);

}  // namespace leash::policystream
