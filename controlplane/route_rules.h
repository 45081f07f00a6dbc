// The kernel's policy-routing rules (`ip rule`), as far as Leash owns them: what the inbound
// routing (inbound_routing.h) reads and writes, behind a narrow interface so that its planning
// is unit-tested against a fake (testing/fake_route_rules.h) and the real one
// (rtnl_route_rules.h: rtnetlink through libmnl) is tested as root in network namespaces.
//
// Why routing: nftables' `meta skuid` is the UID of the process that holds a socket's file, so
// what the kernel sends for a socket nobody holds (a SYN-ACK sent as a SYN cookie, an accepted
// socket its process has closed) carries no UID. A route lookup carries the socket's own owner
// (sk_uid), which the kernel keeps whoever holds the file: a listener's request and child
// lookups use the listener's, and policy routing's `uidrange` matches it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

// The packet-mark bit Leash sets on TCP that arrives from off the host (not over lo). With
// net.ipv4.tcp_fwmark_accept=1 a listener without a mark of its own answers with the mark of
// the packet it answers, so only answers to peers off the host carry the bit. Bit 24: above the
// low bits that firewalls and VPNs hand out first (kube-proxy 0x4000/0x8000, Tailscale
// 0xff0000, Cilium 0xf00).
inline constexpr uint32_t kInboundMark = 0x01000000;

// The rtnetlink protocol (FRA_PROTOCOL, `ip rule ... proto 76`) on every rule Leash adds: how a
// restarted leashd finds its own rules, and how it never touches another owner's.
inline constexpr uint8_t kLeashRuleProtocol = 76;

// Leash's rules sit in one block right after the local table's lookup (priority 0), before the
// host's other rules, so no other owner's table answers a leashed listener's lookup first:
//   1: not fwmark M/M goto 4         unmarked lookups (nearly all) pay this one rule
//   1: not uidrange LO-HI goto 4     marked lookups of UIDs outside every refusal's range
//                                    (the host's own services) pay one more
//   2: fwmark M/M uidrange A-B lookup <subject's table>   the counted refusal (below)
//   3: fwmark M/M uidrange A-B prohibit                   the same range's uncounted refusal
//   4: nop                           the end of Leash's block
// One rule at 2 and one at 3 per merged range of each refusing subject.
inline constexpr uint32_t kGatePriority = 1;
inline constexpr uint32_t kRoutePriority = 2;
inline constexpr uint32_t kRefusalPriority = 3;
inline constexpr uint32_t kEndPriority = 4;

// The counted refusal. A prohibit leaves no packet to count, so a refusing subject's marked
// lookups first look in a table of the subject's own, whose one route goes out
// kRefusalDevice, an ifb device Leash owns: the kernel builds the answer (a SYN-ACK, a cookie's
// SYN-ACK, an orphaned socket's segment), the output hook sees it, and inet leash_filter's
// dispatcher sends it to the subject's own chain by what the route says of its owner (the
// IPv4 route's realm, the IPv6 route's next hop: nft_ruleset.h), which drops and counts it. An
// ifb device drops whatever is sent out of it that tc did not redirect into it, so nothing
// routed there leaves the host even with no chain to drop it. Without the route (the device
// deleted or down, the table flushed) the lookup finds nothing in the table and goes on to the
// prohibit at 3: refused, uncounted.
inline constexpr char kRefusalDevice[] = "leash-inbound";
// The subject's table: this bit plus its UID (a subject whose UID has the bit set gets the
// prohibit only). High table numbers are the ones other owners leave alone (the host's own are
// 253-255, wg-quick's 51820, Tailscale's 52).
inline constexpr uint32_t kSubjectTableBit = 0x80000000u;
// IPv4: the route's gateway (192.0.0.8, RFC 7600's "IPv4 dummy address", on-link on the device)
// and, as its realm (RTA_FLOW, all 32 bits), the subject's UID.
inline constexpr uint8_t kRefusalGateway4[4] = {192, 0, 0, 8};
// IPv6 (no realms): the gateway is this /96 of the ULA space ("lea" "sh") followed by the
// subject's UID, big-endian.
inline constexpr uint8_t kRefusalGatewayPrefix6[12] = {0xfd, 0x6c, 0x65, 0x61, 0x73, 0x68,
                                                       0, 0, 0, 0, 0, 0};
inline bool HasSubjectTable(uint32_t uid) { return (uid & kSubjectTableBit) == 0; }
inline uint32_t SubjectTable(uint32_t uid) { return uid | kSubjectTableBit; }

// One policy-routing rule, as much of it as Leash writes or reads back.
struct RouteRule {
  int family = 0;  // AF_INET or AF_INET6
  uint32_t priority = 0;
  uint8_t action = 0;  // FR_ACT_*
  bool invert = false;  // FIB_RULE_INVERT: `not`
  uint32_t fwmark = 0;
  uint32_t fwmask = 0;
  std::optional<engine::UidRange> uids;
  // A counted refusal's table is SubjectTable(owner); a prohibit's table field holds the
  // owner's UID (a prohibit looks up no table): whose rule it is, read back after a restart.
  uint32_t table = 0;
  uint32_t goto_target = 0;  // FR_ACT_GOTO
  uint8_t protocol = 0;      // FRA_PROTOCOL

  bool operator==(const RouteRule& o) const {
    return family == o.family && priority == o.priority && action == o.action &&
           invert == o.invert && fwmark == o.fwmark && fwmask == o.fwmask && uids == o.uids &&
           table == o.table && goto_target == o.goto_target && protocol == o.protocol;
  }
  bool operator!=(const RouteRule& o) const { return !(*this == o); }
};

// "ipv4 3: fwmark 0x1000000/0x1000000 uidrange 1001-1001 prohibit (subject 1001)", for errors.
std::string DescribeRouteRule(const RouteRule& rule);

class RouteRules {
 public:
  virtual ~RouteRules() = default;

  // Every rule of both families whose protocol is kLeashRuleProtocol, in the kernel's order.
  // Another owner's rules are not returned. Unavailable when the kernel does not answer.
  virtual absl::StatusOr<std::vector<RouteRule>> ListOwn() = 0;

  // The priorities of other owners' rules (any protocol but Leash's, both families).
  virtual absl::StatusOr<std::vector<uint32_t>> OtherPriorities() = 0;

  // Adds `rule`; an identical rule already present is not an error.
  virtual absl::Status Add(const RouteRule& rule) = 0;

  // Deletes the rule that matches `rule` in every field; none is not an error.
  virtual absl::Status Delete(const RouteRule& rule) = 0;

  // Makes kRefusalDevice an ifb device that is up, with no IPv6 address of its own, unless
  // it is one already. FailedPrecondition when a device of that name is of another kind: it
  // could carry what is routed there off the host.
  virtual absl::Status PrepareRefusalDevice() = 0;
  // Deletes kRefusalDevice (and with it every route through it); none is not an error.
  virtual absl::Status DeleteRefusalDevice() = 0;
  // The one route of `uid`'s table (SubjectTable) in `family`: default via the family's
  // refusal gateway on kRefusalDevice, tagged with `uid`, protocol kLeashRuleProtocol. Adding
  // a route that is there, or deleting one that is not, is not an error.
  virtual absl::Status AddRefusalRoute(int family, uint32_t uid) = 0;
  virtual absl::Status DeleteRefusalRoute(int family, uint32_t uid) = 0;

  // net.ipv4.tcp_fwmark_accept of leashd's network namespace (it covers IPv6 listeners too).
  virtual absl::StatusOr<int> ReadFwmarkAccept() = 0;
  virtual absl::Status WriteFwmarkAccept(int value) = 0;
};

}  // namespace leash::controlplane
