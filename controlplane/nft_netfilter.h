// The real Netfilter: leash's per-UID nftables chains (shape in nft_ruleset.h) applied over
// netlink with libnftnl + libmnl, one atomic batch per change; no `nft` binary. Tested for
// real in network namespaces by //test/network:nft_netfilter_test.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controlplane/netfilter.h"
#include "controlplane/nft_ruleset.h"
#include "controlplane/nft_socket.h"

namespace leash::controlplane {

class NftNetfilter : public Netfilter {
 public:
  // Opens the netlink socket and checks that nf_tables answers (Unavailable when it does not:
  // the factory then falls back to iptables). Every later call speaks to the network namespace
  // of the thread that called Create(), whichever thread makes it. Thread-safe: calls are
  // serialized.
  static absl::StatusOr<std::unique_ptr<NftNetfilter>> Create();

  absl::StatusOr<std::vector<std::string>> Prepare() override;
  absl::Status Apply(const NetfilterSubject& subject) override;
  absl::Status ApplyAll(const std::vector<NetfilterSubject>& subjects) override;
  absl::Status Release(uint32_t uid) override;
  absl::StatusOr<std::vector<uint32_t>> ListSubjects() override;
  // One rule dump of `uid`'s chain in inet leash_filter (the kernel filters it by table and
  // chain), tallied by the rules' comments.
  absl::StatusOr<NetfilterCounters> ReadCounters(uint32_t uid) override;
  std::string Describe() const override { return "nftables"; }

 private:
  // Which of the three tables already hold a UID's chain, and every owner's map intervals.
  struct Presence {
    std::set<uint32_t> chains[3];
    nft::PresentIntervals elements[3];
  };

  explicit NftNetfilter(std::unique_ptr<NftSocket> socket) : socket_(std::move(socket)) {}

  absl::StatusOr<bool> TableExists(const nft::LeashTable& table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<nft::TableSnapshot> ReadTable(const nft::LeashTable& table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // UIDs with an agent_<uid> chain in `table` (empty when the table does not exist).
  absl::StatusOr<std::set<uint32_t>> AgentChains(const nft::LeashTable& table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The intervals of `table`'s agents map, by subject (empty when there is no map).
  absl::StatusOr<nft::PresentIntervals> MapElements(const nft::LeashTable& table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> ChainExists(const nft::LeashTable& table, uint32_t uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One UID's presence: a direct chain lookup per table, and the map's intervals from a dump
  // (an interval map has no lookup by owner); many UIDs' by one dump per table and map.
  absl::StatusOr<Presence> PresenceOf(uint32_t uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Presence> PresenceOfAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ApplyWith(const std::vector<NetfilterSubject>& subjects, const Presence& presence)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Explains a refused apply whose cause is a missing table (Prepare not run).
  absl::Status ExplainApplyFailure(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::unique_ptr<NftSocket> socket_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::controlplane
