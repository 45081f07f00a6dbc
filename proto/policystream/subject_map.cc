#include "proto/policystream/subject_map.h"

#include <optional>
#include <utility>

namespace leash::policystream {

SubjectEntry MakeSubjectEntry(const leash::v1::SubjectPolicy& wire) {
  SubjectEntry entry;
  entry.uid = wire.uid();
  entry.account = wire.account();
  entry.port = static_cast<uint16_t>(wire.port());
  for (const leash::v1::IdRange& range : wire.subordinate_uids()) {
    if (range.first() <= range.last()) entry.subordinate_uids.push_back({range.first(), range.last()});
  }
  for (const leash::v1::IdRange& range : wire.subordinate_uids_in_chain()) {
    if (range.first() <= range.last()) {
      entry.subordinate_uids_in_chain.push_back({range.first(), range.last()});
    }
  }
  for (const leash::v1::IdRange& range : wire.subordinate_gids()) {
    if (range.first() <= range.last()) entry.subordinate_gids.push_back({range.first(), range.last()});
  }
  entry.subid_owners.assign(wire.subid_owners().begin(), wire.subid_owners().end());
  for (const std::string& text : wire.dns_resolvers()) {
    if (std::optional<engine::IpAddress> address = engine::ParseIpAddress(text)) {
      entry.dns_resolvers.push_back(engine::UnmapV4(*address));
    }
  }
  if (wire.has_policy()) {
    std::vector<engine::CommandLink> links;
    for (const leash::v1::CommandLink& link : wire.command_links()) {
      links.push_back({link.name(), link.target()});
    }
    entry.policy = std::make_shared<const engine::CompiledPolicy>(
        engine::CompiledPolicy::Compile(wire.policy(), links,
                                        wire.has_audit_above() ? &wire.audit_above() : nullptr));
  } else {
    // No policy (or a malformed entry with neither state): denied.
    entry.no_policy_reason =
        wire.has_no_policy() ? wire.no_policy().reason() : "no policy in the update";
    leash::v1::Config fail;
    if (wire.has_no_policy()) fail.set_fail_mode(wire.no_policy().fail_mode());
    entry.onboarding = wire.has_no_policy() && wire.no_policy().onboarding();
    entry.no_policy_fail_mode = engine::EffectiveFailMode(fail);
  }
  return entry;
}

}  // namespace leash::policystream
