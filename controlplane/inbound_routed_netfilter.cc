#include "controlplane/inbound_routed_netfilter.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace leash::controlplane {

absl::StatusOr<std::vector<std::string>> InboundRoutedNetfilter::Prepare() {
  ASSIGN_OR_RETURN(std::vector<std::string> lines, chains_->Prepare());
  ASSIGN_OR_RETURN(const std::vector<std::string> routed, routing_->Prepare());
  lines.insert(lines.end(), routed.begin(), routed.end());
  return lines;
}

absl::Status InboundRoutedNetfilter::Apply(const NetfilterSubject& subject) {
  RETURN_IF_ERROR(chains_->Apply(subject));
  return routing_->Apply(subject);
}

absl::Status InboundRoutedNetfilter::ApplyAll(const std::vector<NetfilterSubject>& subjects) {
  RETURN_IF_ERROR(chains_->ApplyAll(subjects));
  return routing_->ApplyAll(subjects);
}

absl::Status InboundRoutedNetfilter::Release(uint32_t uid) {
  const absl::Status routed = routing_->Release(uid);
  const absl::Status chained = chains_->Release(uid);
  return chained.ok() ? routed : chained;
}

std::string InboundRoutedNetfilter::Describe() const {
  return absl::StrCat(chains_->Describe(), " + policy routing");
}

}  // namespace leash::controlplane
