// The network surface's redirect rules for the proxy tests, installed by the product's own
// libnftnl applier (controlplane/nft_netfilter.h) in the test's network namespace: per UID, the
// skuid dispatch to agent_<uid>, the loopback exemption except the proxy range 18000-18999,
// and every TCP connection redirected to the UID's port, for ip and ip6; for an agent given
// resolvers, the UDP drop and DNS to them (redirected to its port under network.dns: filter). The rules live in the
// namespace and go with it.
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "controlplane/netfilter_factory.h"
#include "engine/ip_address.h"
#include "test/fixtures/netns.h"

namespace leash::testing {

struct RedirectedAgent {
  uint32_t uid = 0;
  uint16_t port = 0;
  // Empty: UDP left unfiltered (the tests about TCP). Otherwise the product's UDP rules with these
  // resolvers, and their DNS redirected to the agent's port when `dns_filter`.
  std::vector<engine::IpAddress> dns_resolvers;
  bool dns_filter = false;
  // network.udp: allow; unset: allowed exactly when there are no resolvers (above).
  std::optional<bool> udp_allowed;
};

// Applies `agents` in `ns` with NftNetfilter.
inline absl::Status InstallRedirectRules(const NetNamespace& ns,
                                         const std::vector<RedirectedAgent>& agents) {
  absl::StatusOr<NetNamespace::Entered> entered = ns.Enter();
  if (!entered.ok()) return entered.status();
  absl::StatusOr<controlplane::NetfilterChoice> choice =
      controlplane::ChooseNetfilter(controlplane::NetfilterBackend::kNftables);
  if (!choice.ok()) return choice.status();
  absl::StatusOr<std::vector<std::string>> prepared = choice->netfilter->Prepare();
  if (!prepared.ok()) return prepared.status();
  std::vector<controlplane::NetfilterSubject> subjects;
  for (const RedirectedAgent& agent : agents) {
    controlplane::NetfilterSubject subject;
    subject.uid = agent.uid;
    subject.port = agent.port;
    subject.udp_allowed = agent.udp_allowed.value_or(agent.dns_resolvers.empty());
    subject.dns_resolvers = agent.dns_resolvers;
    subject.dns_filter = agent.dns_filter;
    subjects.push_back(subject);
  }
  return choice->netfilter->ApplyAll(subjects);
}

}  // namespace leash::testing
