// Releasing every subject: the one path by which Leash un-confines the host,
// taken by leashd's stop path after a deliberate stop and by `leashd
// --teardown` after leashd has ended ("releasing for real is the service's stop
// path, which drops every UID the port map holds").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "controlplane/inbound_routing.h"
#include "controlplane/netfilter.h"

namespace leash::controlplane {

struct Released {
  // How many distinct UIDs were asked to be released.
  size_t subjects = 0;
  // The chains' release (TeardownSubjects): names every UID that failed.
  absl::Status chains;
  // The policy-routing block and the host's tcp_fwmark_accept
  // (InboundRouting::ReleaseHost).
  absl::Status routing;
};

// Releases the chain of each of `uids` (duplicates counted once), carrying on
// past failures, then, with `routing` (null: left to the caller), the host's
// policy routing.
Released ReleaseAllSubjects(Netfilter& netfilter, std::vector<uint32_t> uids,
                            InboundRouting* routing);

}  // namespace leash::controlplane
