#include "controlplane/release_all_subjects.h"

#include <algorithm>

#include "controlplane/netfilter_factory.h"

namespace leash::controlplane {

Released ReleaseAllSubjects(Netfilter& netfilter, std::vector<uint32_t> uids,
                            InboundRouting* routing) {
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  Released released;
  released.subjects = uids.size();
  released.chains = TeardownSubjects(netfilter, uids);
  if (routing != nullptr) released.routing = routing->ReleaseHost();
  return released;
}

}  // namespace leash::controlplane
