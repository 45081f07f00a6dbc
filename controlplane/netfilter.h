// The kernel side of the network surface, as leashd sees it: per-UID nftables chains that send
// a leashed UID's TCP to its own proxy listener and drop its UDP. Everything above this
// interface (reconcile, the port map) is unit-tested against a fake; the real implementation
// (nft_netfilter.h: libnftnl + libmnl, one netlink batch per change) is tested for real in
// network namespaces.
//
// Shape in the kernel (docs/ARCHITECTURE.md, rule N2: one chain per UID):
//   table ip leash / table ip6 leash: a nat `output` hook chain that is a dispatcher holding
//     nothing but the skuid -> agent_<uid> dispatch (a verdict map keyed by skuid, so the cost
//     per new connection does not grow with the number of agents), and one hookless chain
//     agent_<uid> per UID: under network.dns: filter, DNS (UDP and TCP) to the resolvers
//     redirected to the UID's port; loopback exempt except the proxy range 18000-18999; then
//     redirect all TCP to the UID's port.
//   table inet leash_filter: per UID, drop what the UID sends as the responder of a connection
//     it did not originate to a peer off this host (unless network.inbound is allow), drop TCP
//     to a destination off this host (the redirect sends all of its TCP to the proxy, so what
//     is left escaped it), and drop UDP except DNS (under network.dns: filter, what the nat
//     chain redirected to the UID's own DNS listener; under resolvers, UDP/53 to the resolvers)
//     — or nothing, when network.udp is allow.
//   table inet leash_guard: one rule for every UID, none of its own: the answers off the host
//     of a connection a UID's inbound drop labelled, sent by a socket its process has closed
//     (which carries no UID); and one that marks TCP arriving from off the host for the
//     policy routing that refuses a leashed listener's answers (inbound_routing.h). Made by
//     Prepare, stateless.
// Onboarding or releasing a UID adds or deletes exactly its chains and its dispatch element.
// Nothing flushes a chain or deletes a shared table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/ip_address.h"
#include "engine/reserved_ports.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

// The reserved loopback port range and the single-agent port (engine/reserved_ports.h).
using engine::kProxyPortFirst;
using engine::kProxyPortLast;
using engine::kSingleSubjectPort;

struct NetfilterSubject {
  uint32_t uid = 0;
  // The subordinate UIDs that are this subject's too (disjoint from every other subject's):
  // dispatched to the same chain, so a process of the agent inside its own user namespace
  // meets the same redirect and filter.
  std::vector<engine::UidRange> subordinate_uids;
  // The UID's proxy listener port (127.0.0.1 and ::1). 0: the subject has no port (none could
  // be held for it): its chain is the refuse-all one (refuse_tcp set, nothing redirected, no
  // DNS let through), so that no subject is ever left without a chain.
  uint16_t port = 0;
  // network.udp: allow — UDP unfiltered, as an explicit choice.
  bool udp_allowed = false;
  // network.inbound: allow — the UID may serve TCP to peers off this host that connect to it,
  // as an explicit choice. False: what it sends on a connection it did not originate (conntrack's
  // reply direction) to a peer off this host is dropped and counted.
  bool inbound_allowed = false;
  // The resolvers (the host's /etc/resolv.conf, or network.dns_resolvers). Empty: no DNS.
  std::vector<engine::IpAddress> dns_resolvers;
  // network.dns: filter — UDP and TCP to port 53 of a resolver or of any loopback address are
  // redirected to the UID's own DNS listener (the proxy's UDP socket and TCP listener on
  // `port`), and only that passes the UDP drop. False (network.dns: resolvers): UDP/53 to the
  // resolvers passes the drop unjudged, and loopback DNS reaches only the loopback resolvers.
  bool dns_filter = false;
  // The proxy could not bind this UID's listener (someone else holds the port): its TCP is
  // refused (reset) at its own chain rather than redirected to whoever holds the port.
  // Loopback services stay reachable as for every subject.
  bool refuse_tcp = false;

  bool operator==(const NetfilterSubject& other) const {
    return uid == other.uid && subordinate_uids == other.subordinate_uids && port == other.port &&
           udp_allowed == other.udp_allowed && inbound_allowed == other.inbound_allowed &&
           dns_resolvers == other.dns_resolvers && dns_filter == other.dns_filter &&
           refuse_tcp == other.refuse_tcp;
  }
  bool operator!=(const NetfilterSubject& other) const { return !(*this == other); }
};

// Packets one UID's filter chain has counted since the chain was last applied (a changed
// policy replaces the chain, and its counters start over).
struct NetfilterCounters {
  // Sent as the responder of a connection it did not originate, to a peer off this host, and
  // dropped (network.inbound: drop).
  uint64_t inbound_dropped_packets = 0;
  // The same, let through (network.inbound: allow; TCP only).
  uint64_t inbound_allowed_packets = 0;
  // TCP to a destination off this host that was not an allowed answer: it escaped the redirect
  // to the proxy (untracked, or another nat rule took it), and was dropped.
  uint64_t unproxied_dropped_packets = 0;
  // DNS (UDP or TCP port 53) to a loopback address that is neither redirected to the subject's
  // filter nor one of its own resolvers under network.dns: resolvers, refused.
  uint64_t loopback_dns_refused_packets = 0;
};

// The checks every implementation makes before touching the kernel: a UID other than root
// (leashing root would redirect leashd's and the proxy's own connections into the proxy) and a
// listener port inside kProxyPortFirst..kProxyPortLast. InvalidArgument naming the subject
// otherwise.
absl::Status ValidateNetfilterSubject(const NetfilterSubject& subject);

// The UIDs a subject's dispatch covers: its own and its subordinate ranges, merged.
std::vector<engine::UidRange> DispatchedUids(const NetfilterSubject& subject);

class Netfilter {
 public:
  virtual ~Netfilter() = default;

  // Before the first subject: drops any leash table still in the old shape (UID rules directly
  // in the hooked chain) and creates the shared tables, dispatchers and maps if absent — never
  // flushing what exists. The guard table (no subject's state) is made, or replaced when it is
  // not in its current shape. Returns the lines to say on stderr (one per dropped table).
  virtual absl::StatusOr<std::vector<std::string>> Prepare() = 0;

  // Adds `subject`'s chains and dispatch element, or replaces them if the UID already has
  // them, in one atomic batch. Other UIDs' chains, elements and counters are untouched.
  virtual absl::Status Apply(const NetfilterSubject& subject) = 0;

  // Applies many subjects in one batch (startup). All or nothing.
  virtual absl::Status ApplyAll(const std::vector<NetfilterSubject>& subjects) = 0;

  // Deletes exactly this UID's chains and dispatch element. A UID with none is not an error.
  virtual absl::Status Release(uint32_t uid) = 0;

  // The packets `uid`'s filter chain has counted (see NetfilterCounters). NotFound when the UID
  // has no chain; Unimplemented where the implementation counts nothing.
  virtual absl::StatusOr<NetfilterCounters> ReadCounters(uint32_t uid) = 0;

  // The UIDs that currently have an agent_<uid> chain.
  virtual absl::StatusOr<std::vector<uint32_t>> ListSubjects() = 0;

  // A short name for status and logs ("nftables", "iptables (IPv4 TCP only, single UID)").
  virtual std::string Describe() const = 0;
};

}  // namespace leash::controlplane
