// A Netfilter that applies each subject's inbound-routing refusals (inbound_routing.h) with its
// chains: whatever applies, replaces or releases a subject's nftables (or iptables) rules does
// the same to its policy-routing rules, in the same call. Prepare also prepares the routing
// (the sysctl, the gate). Neither object is owned.
#pragma once

#include <string>
#include <vector>

#include "controlplane/inbound_routing.h"
#include "controlplane/netfilter.h"

namespace leash::controlplane {

class InboundRoutedNetfilter : public Netfilter {
 public:
  InboundRoutedNetfilter(Netfilter* chains, InboundRouting* routing)
      : chains_(chains), routing_(routing) {}

  absl::StatusOr<std::vector<std::string>> Prepare() override;
  // The chains first, then the routing; an error from either is the call's error (the
  // reconcile then reports the subject as not in force and tries again).
  absl::Status Apply(const NetfilterSubject& subject) override;
  absl::Status ApplyAll(const std::vector<NetfilterSubject>& subjects) override;
  // Both are released even when one fails.
  absl::Status Release(uint32_t uid) override;
  absl::StatusOr<NetfilterCounters> ReadCounters(uint32_t uid) override {
    return chains_->ReadCounters(uid);
  }
  absl::StatusOr<std::vector<uint32_t>> ListSubjects() override {
    return chains_->ListSubjects();
  }
  std::string Describe() const override;

 private:
  Netfilter* const chains_;
  InboundRouting* const routing_;
};

}  // namespace leash::controlplane
