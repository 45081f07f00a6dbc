// The fallback Netfilter for hosts where nf_tables does not answer: the iptables binaries
// (the one place the product runs a program for netfilter), IPv4 TCP only, one UID only
// (docs/ARCHITECTURE.md, rule N13: it says so on stderr rather than letting anyone assume
// parity, and because it appends into the built-in nat OUTPUT chain, which cannot express a
// per-UID dispatch, a host with several UIDs to enforce refuses to run on it). No IPv6
// redirect, no UDP drop.
//
// Per UID, two rules appended to nat OUTPUT, tagged with a comment so they can be found again:
//   -A OUTPUT -d <loopback resolver>/32 -p tcp -m owner --uid-owner U -m tcp --dport 53
//       -m comment --comment leash-agent-U -j RETURN     (network.dns: resolvers only)
//   -A OUTPUT -d 127.0.0.0/8 -p tcp -m owner --uid-owner U -m multiport
//       ! --dports 53,18000:18999 -m comment --comment leash-agent-U -j RETURN
//   -A OUTPUT -p tcp -m owner --uid-owner U -m comment --comment leash-agent-U
//       -j REDIRECT --to-ports P
// and, in filter OUTPUT, the IPv4 half of the nftables filter chain's off-loopback rules (no
// RETURN or ACCEPT: a verdict in a built-in chain would skip the host's own rules after it):
//   -A OUTPUT -m owner --uid-owner U -m conntrack --ctdir REPLY -m addrtype ! --dst-type LOCAL
//       -m connlabel --label 127 --set -m comment --comment leash-agent-U -j DROP
//                                                            (inbound; not with network.inbound:
//                                                             allow)
//   -A OUTPUT -p tcp -m owner --uid-owner U -m conntrack --ctdir ORIGINAL
//       -m addrtype ! --dst-type LOCAL ... -j DROP
//   -A OUTPUT -p tcp -m owner --uid-owner U -m conntrack --ctstate INVALID,UNTRACKED
//       -m addrtype ! --dst-type LOCAL ... -j DROP           (TCP that escaped the redirect)
// and once, for every UID (Prepare), the guard of the nftables guard table (nft_ruleset.h):
//   -A OUTPUT -m owner ! --socket-exists -m conntrack --ctdir REPLY -m connlabel --label 127
//       -m addrtype ! --dst-type LOCAL -m comment --comment leash-guard -j DROP
// A UID it cannot enforce (a second one) can be closed instead (Close):
//   -A OUTPUT -m owner --uid-owner U -m comment --comment leash-closed-U
//       -j REJECT --reject-with icmp-port-unreachable
// and the mark of the nftables guard's prerouting chain, for policy routing (route_rules.h):
//   -t mangle -A PREROUTING -p tcp ! -i lo -m comment --comment leash-inbound-mark
//       -j MARK --or-mark 0x1000000
// Each change is one `iptables-restore --noflush` run of a nat and a filter commit (atomic per
// table). Tested for real by //test/network:iptables_fallback_test and
// //test/network:inbound_traffic_test.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "controlplane/netfilter.h"

namespace leash::controlplane {

class IptablesNetfilter : public Netfilter {
 public:
  // `iptables`: the iptables binary to drive (its `-save` and `-restore` siblings are used);
  // empty picks DefaultIptablesCommand(). Like NftNetfilter, every later call acts in the
  // network namespace of the thread that called Create(), whichever thread makes it.
  // Unavailable when the binaries cannot be found or the namespace cannot be opened.
  static absl::StatusOr<std::unique_ptr<IptablesNetfilter>> Create(std::string iptables = "");
  ~IptablesNetfilter() override;

  // Checks that `iptables-save` runs for nat and filter, and adds the guard rule to filter
  // OUTPUT and the inbound mark to mangle PREROUTING unless they are there. No lines.
  absl::StatusOr<std::vector<std::string>> Prepare() override;
  // FailedPrecondition when another UID is already enforced here.
  absl::Status Apply(const NetfilterSubject& subject) override;
  // FailedPrecondition for more than one subject.
  absl::Status ApplyAll(const std::vector<NetfilterSubject>& subjects) override;
  // Deletes the UID's rules, and its closure (Close) if it has one.
  absl::Status Release(uint32_t uid) override;
  // The UIDs with rules here: the one enforced, and every closed one (so that a teardown
  // releases those too).
  absl::StatusOr<std::vector<uint32_t>> ListSubjects() override;
  // Closes `uid`'s network: one rule in filter OUTPUT refusing everything it sends (comment
  // leash-closed-<uid>), for a UID the fallback cannot enforce because it already enforces
  // another. Not counted as enforced: Apply(uid) replaces the closure with the subject's rules,
  // Release(uid) deletes it. A UID already closed is left as it is. InvalidArgument for root.
  absl::Status Close(uint32_t uid);
  // The UIDs closed here, ascending.
  absl::StatusOr<std::vector<uint32_t>> ListClosed();
  // From `iptables-save -c -t filter` (IPv4 only, as everything here).
  absl::StatusOr<NetfilterCounters> ReadCounters(uint32_t uid) override;
  std::string Describe() const override { return "iptables (IPv4 TCP only, single UID)"; }

  const std::string& command() const { return iptables_; }

 private:
  IptablesNetfilter(std::string iptables, int netns_fd)
      : iptables_(std::move(iptables)), netns_fd_(netns_fd) {}
  // `iptables-save -t <table>` (with -c, counters on each rule).
  absl::StatusOr<std::string> Save(absl::string_view table, bool counters = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Restore(const std::string& script) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::string iptables_;
  const int netns_fd_;
};

// /usr/sbin/iptables-legacy when it exists (when nf_tables does not answer, iptables-nft
// cannot work either), else /usr/sbin/iptables.
std::string DefaultIptablesCommand();

// --- Pure pieces, unit-tested ---

// The UIDs that have leash rules in `iptables-save -t nat` or `-t filter` output (comment
// leash-agent-<uid> on an -A OUTPUT line, with or without -c counters), ascending, without
// duplicates.
std::vector<uint32_t> ParseIptablesUids(absl::string_view save_output);

// The UIDs closed (Close) in `iptables-save -t filter` output, ascending.
std::vector<uint32_t> ParseIptablesClosedUids(absl::string_view save_output);
// The filter -A line that closes `uid` (see Close).
std::string IptablesClosedLine(uint32_t uid);

// The -D lines that delete every leash rule of `uid` found in `save_output`, its closure
// included.
std::vector<std::string> IptablesDeleteLines(absl::string_view save_output, uint32_t uid);

// The nat -A lines for `subject` (see the file comment).
std::vector<std::string> IptablesAddLines(const NetfilterSubject& subject);
// The filter -A lines for `subject` (see the file comment).
std::vector<std::string> IptablesFilterAddLines(const NetfilterSubject& subject);

// The guard rule (see the file comment), and whether `iptables-save -t filter` output has it.
std::string IptablesGuardLine();
bool HasIptablesGuard(absl::string_view save_output);
// The mangle rule that marks TCP from off the host for policy routing (route_rules.h), and
// whether `iptables-save -t mangle` output has it.
std::string IptablesInboundMarkLine();
bool HasIptablesInboundMark(absl::string_view save_output);

// An iptables-restore --noflush script for `table`: `lines`, then COMMIT.
std::string IptablesRestoreScript(const std::vector<std::string>& lines,
                                  absl::string_view table = "nat");

// `uid`'s counters in `iptables-save -c -t filter` output: its --ctdir REPLY drop is inbound,
// its other drops are TCP that escaped the redirect. NotFound when it has no filter rule.
absl::StatusOr<NetfilterCounters> IptablesCounters(absl::string_view save_output, uint32_t uid);

}  // namespace leash::controlplane
