// The network surface's redirect rules for the proxy tests, installed by the product's own
// libnftnl applier (controlplane/nft_netfilter.h) in the test's network namespace: per UID, the
// skuid dispatch to agent_<uid>, the loopback exemption except the proxy range 18000-18999,
// and every TCP connection redirected to the UID's port, for ip and ip6. The rules live in the
// namespace and go with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controlplane/netfilter_factory.h"
#include "test/fixtures/netns.h"

namespace leash::testing {

struct RedirectedAgent {
  uint32_t uid = 0;
  uint16_t port = 0;
};

// Applies `agents` in `ns` with NftNetfilter (UDP left unfiltered: these tests are about TCP).
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
    subject.udp_allowed = true;
    subjects.push_back(subject);
  }
  return choice->netfilter->ApplyAll(subjects);
}

}  // namespace leash::testing
