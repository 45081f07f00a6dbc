// Leash's nftables shape, as libnftnl objects appended to an NftBatch, and the test that tells
// a leash table in the current shape from one left by an older version. Pure: no socket, so
// every rule Leash installs is unit-tested against the expressions `nft` itself generates.
//
// The shape (docs/ARCHITECTURE.md, rule N2: one chain per UID):
//   table ip leash / table ip6 leash
//     map agents { type uid : verdict; flags interval }
//                                                 per subject: its UID and each subordinate UID
//                                                 range (merged) : jump agent_<uid>
//     chain output { type nat hook output priority -100; policy accept;
//                    meta skuid vmap @agents }   the dispatcher, and nothing else
//     chain agent_<uid> {                         hookless, one per UID
//       ip daddr <resolver> udp dport 53 counter redirect to :<port>   (network.dns: filter,
//       ip daddr <resolver> tcp dport 53 counter redirect to :<port>    per resolver of the
//                                                                       table's family that
//                                                                       is not loopback)
//       ip daddr 127.0.0.0/8 udp dport 53 counter redirect to :<port>  (network.dns: filter:
//       ip daddr 127.0.0.0/8 tcp dport 53 counter redirect to :<port>   DNS to any loopback
//                                                                       address; ip6: ::1)
//       ip daddr 127.0.0.0/8 tcp dport != 18000-18999 counter return   (ip6: ip6 daddr ::1)
//       meta l4proto tcp counter redirect to :<port>
//     }
//   table inet leash_filter
//     map agents, chain output { type filter hook output priority 0; policy accept;
//                    meta skuid vmap @agents
//                    oifname "leash-inbound" meta nfproto ipv4 meta rtclassid vmap @agents
//                    oifname "leash-inbound" meta nfproto ipv6
//                      (rt ip6 nexthop's last 32 bits) vmap @agents }
//                                   the second and third: what a counted inbound refusal routed
//                                   to the refusal device (route_rules.h), owned by a process
//                                   or not, goes to the subject's chain by its route's realm
//                                   (IPv4) or next hop (IPv6), both the subject's UID
//     chain agent_<uid> {
//       tcp sport 18000-18999 tcp flags & (syn | ack) == syn | ack counter drop
//                                                           (a listener squatting a proxy port)
//       ct direction reply fib daddr type != local ct label set 127 counter drop
//                                                   (inbound service to a peer off the host;
//                                                    with network.inbound: allow `... meta
//                                                    l4proto tcp counter return` instead)
//       meta l4proto tcp fib daddr type != local counter drop
//                                                   (TCP that escaped the redirect)
//       ip daddr <loopback resolver> udp dport 53 counter return   (network.dns: resolvers, and
//       ip daddr <loopback resolver> tcp dport 53 counter return    a subject with no policy:
//                                                                   its own loopback resolvers)
//       meta nfproto ipv4 ip daddr 127.0.0.0/8 udp dport 53 counter reject  (icmpx port-
//       meta nfproto ipv4 ip daddr 127.0.0.0/8 tcp dport 53 counter reject   unreachable; tcp
//       meta nfproto ipv6 ip6 daddr ::1 udp dport 53 counter reject          reset: DNS to a
//       meta nfproto ipv6 ip6 daddr ::1 tcp dport 53 counter reject          loopback address
//                                                                            no redirect took)
//       meta l4proto udp counter return                     (only when network.udp: allow)
//       ip daddr 127.0.0.1 udp dport <port> counter return   (network.dns: filter: the DNS
//       ip6 daddr ::1 udp dport <port> counter return         the nat chain redirected; not
//                                                             while the listener is unbound)
//       ip daddr <resolver> udp dport 53 counter return      (network.dns: resolvers: one per
//       ip6 daddr <resolver> udp dport 53 counter return      resolver; neither rule with
//                                                             network.udp: allow)
//       meta l4proto != tcp counter drop                    (UDP, ICMP ping sockets, UDP-Lite,
//     }                                                      SCTP: nothing the proxy judges)
// The dispatcher is one interval lookup keyed by the socket's UID, so a new connection costs
// about the same with 1 agent or 1,000 (a linear list of `meta skuid X jump` rules grows with
// every rule). An interval map keys big-endian: the rule converts the UID first (byteorder), and
// each interval is two elements, its first UID with the verdict and the UID past its last
// flagged interval-end, as `nft` itself sends them. A process of the agent inside a user
// namespace it mapped its /etc/subuid range into runs under a host UID of that range and
// reaches the agent's own chain.
//
// Loopback and IPv6. "Loopback" is the destination address, per family: 127.0.0.0/8 in
// ip leash, ::1 in ip6 leash. Not the route (`oif "lo"`): that would also exempt every other
// address of this host, which the kernel routes over lo too, so a leashed UID could reach a
// service on the host's own public address unjudged. The proxy range is carved out of the
// exemption, so an attempt at 127.0.0.1:18xxx or [::1]:18xxx falls through to the attempting
// UID's own redirect. `redirect` in the output hook rewrites the destination to the loopback
// address of the packet's own family — 127.0.0.1 for IPv4, ::1 for IPv6 — keeping the new
// port, so the proxy's listener pair on 127.0.0.1:<port> and [::1]:<port> receives the UID's
// IPv4 and IPv6 connections respectively; SO_ORIGINAL_DST (IPv4) and IP6T_SO_ORIGINAL_DST
// (IPv6) give back the address the agent asked for. A destination written IPv4-mapped
// (::ffff:a.b.c.d) on a dual-stack socket leaves as an IPv4 packet and meets the ip table.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controlplane/netfilter.h"
#include "controlplane/nft_batch.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane::nft {

inline constexpr char kNatTable[] = "leash";
inline constexpr char kFilterTable[] = "leash_filter";
inline constexpr char kDispatchChain[] = "output";
inline constexpr char kAgentsMap[] = "agents";
// nft's own datatype number for `uid` (nftables datatype.h TYPE_UID), so `nft list` prints
// the map as `type uid : verdict` and its keys as numbers.
inline constexpr uint32_t kNftTypeUid = 24;

// One of the three tables Leash owns.
struct LeashTable {
  uint16_t family;  // NFPROTO_IPV4, NFPROTO_IPV6 or NFPROTO_INET
  const char* name;
  bool nat;  // the redirect tables (ip/ip6 leash) rather than the UDP filter
  // "ip leash", as nft prints it.
  std::string Label() const;
};

// A table of its own with one hooked chain and one rule, for what no per-UID chain can see:
//   table inet leash_guard
//     chain output { type filter hook output priority 0; policy accept;
//       ct direction reply ct label 127 fib daddr type != local counter drop }
// `meta skuid` is the UID of the process that holds a socket's file, so a socket its process
// has closed has none, and what the kernel still sends for it (retransmissions, its FIN) passes
// every per-UID dispatch. A UID's inbound drop labels the connection it refuses; the guard then
// drops that connection's answers off the host whoever (or nobody) owns them. No subject's
// state lives here: Prepare replaces the table whole.
inline constexpr char kGuardTable[] = "leash_guard";
// The conntrack label bit (0-127) of a refused inbound connection: the top one, where other
// users of labels, which count from 0 in /etc/connlabel.conf, are least likely to be.
inline constexpr int kInboundLabelBit = 127;
inline constexpr char kGuardDropComment[] = "leash: answer of a closed socket dropped";
// The guard's second chain: `chain prerouting { type filter hook prerouting priority mangle;
// meta l4proto tcp iif != lo meta mark set meta mark or 0x1000000 }` — the mark by which
// policy routing refuses a leashed listener's answers to a peer off the host, including those
// no process owns (controlplane/route_rules.h).
inline constexpr char kGuardMarkChain[] = "prerouting";
inline constexpr int kGuardMarkPriority = -150;  // NF_IP_PRI_MANGLE: before any route decision

// The comments on the filter-chain rules whose counters ReadCounters reports, as `nft list`
// prints them.
inline constexpr char kInboundDropComment[] = "leash: inbound dropped";
inline constexpr char kInboundAllowComment[] = "leash: inbound allowed";
inline constexpr char kUnproxiedDropComment[] = "leash: tcp past the proxy dropped";
inline constexpr char kLoopbackDnsRefusedComment[] = "leash: loopback dns refused";

// ip leash, ip6 leash, inet leash_filter — in that order.
const std::vector<LeashTable>& LeashTables();

std::string AgentChainName(uint32_t uid);
// The UID of a chain named agent_<decimal uid>, or nullopt for any other name.
std::optional<uint32_t> ParseAgentChainName(absl::string_view name);

// inet leash_guard (above).
const LeashTable& GuardTable();
// Creates the guard table, its two chains and their rules. Only for a table that does not exist.
void AddGuard(NftBatch& batch);

// Adds `rule`'s counter to the field of `counters` its comment names (one of the k*Comment
// above); a rule with another comment or none adds nothing.
void TallyCounters(const nftnl_rule* rule, NetfilterCounters& counters);

// Creates `table`, its agents map, its dispatcher chain and the one dispatch rule. Only for a
// table that does not exist: NEWRULE always appends, so this must never run twice on a table.
// `set_id` names the map within the batch (the rule refers to a map made in the same batch).
void AddSkeleton(NftBatch& batch, const LeashTable& table, uint32_t set_id);

// The agents map's intervals as the kernel holds them, by the subject UID they jump to.
using PresentIntervals = std::map<uint32_t, std::vector<engine::UidRange>>;

// One element of a dump of the agents map: its key (host order) and either the chain it
// jumps to or the interval-end flag.
struct DumpedElement {
  uint32_t key = 0;
  bool interval_end = false;
  std::string jump_chain;
};
// Pairs a dump's elements into intervals per agent_<uid> chain. An interval with no end
// element runs to the last UID.
PresentIntervals PairDumpedElements(std::vector<DumpedElement> elements);

// The change Apply/ApplyAll makes to one table: for the UIDs among `subjects` that already
// have intervals or a chain (`elements_present` holds every owner's intervals in the map,
// `chains_present` the chains), deletes exactly those first, and any other owner's interval
// that overlaps one of the new claims (stale: leashd makes its subjects' UIDs disjoint); then
// adds each subject's chain and rules, and its intervals (DispatchedUids). Elements travel a
// few hundred to a message. Nothing else of any other UID is touched.
void ApplySubjects(NftBatch& batch, const LeashTable& table,
                   const std::vector<NetfilterSubject>& subjects,
                   const PresentIntervals& elements_present,
                   const std::set<uint32_t>& chains_present);

// Deletes the map intervals in `elements` and then the chains (with their rules) of
// `chain_uids` from `table`. Elements go first: the kernel refuses to delete a chain that a map
// element still jumps to.
void ReleaseSubjects(NftBatch& batch, const LeashTable& table, const PresentIntervals& elements,
                     const std::vector<uint32_t>& chain_uids);

// What a leash table holds, as read back from the kernel: enough to judge its shape.
struct ExprSnapshot {
  std::string name;        // "meta", "lookup", "immediate", ...
  uint32_t meta_key = 0;   // meta: NFTA_META_KEY
  uint32_t dreg = 0;       // meta, lookup, byteorder
  uint32_t sreg = 0;       // lookup, byteorder
  uint32_t byteorder_op = 0;  // byteorder: NFT_BYTEORDER_HTON / NTOH
  std::string set;         // lookup: the set's name
};
struct BaseChainSnapshot {
  std::string name;
  std::string type;  // "nat", "filter", "route"
  uint32_t hooknum = 0;
  std::vector<std::vector<ExprSnapshot>> rules;
};
struct MapSnapshot {
  std::string name;
  uint32_t flags = 0;
  uint32_t key_len = 0;
  uint32_t data_type = 0;
};
struct TableSnapshot {
  std::vector<MapSnapshot> sets;
  std::vector<BaseChainSnapshot> base_chains;
};

// The current shape, precisely: the table has a set named `agents` that is an interval verdict
// map with a 4-byte key, and exactly one base chain, named `output`, of type nat (ip/ip6 leash)
// or filter (inet leash_filter) on the output hook, holding exactly one rule:
// `meta skuid vmap @agents` (meta load skuid => reg 1; byteorder reg 1 = hton(reg 1, 4, 4);
// lookup reg 1 set agents dreg 0). A map of single UIDs (before subordinate ranges were
// subjects) is the old shape too: it cannot hold a range.
// Hookless chains are not judged: they run only when the dispatcher sends a UID there.
// Anything else in a leash table is the old shape — UID rules directly in the hooked chain, a
// linear `meta skuid X jump agent_X` dispatcher, a second hooked chain, a missing map — and a
// per-subject Release cannot see it, so a stale redirect there would win over the new dispatch
// (a redirect is a terminal verdict; docs/ARCHITECTURE.md, rule N12).
// Returns nullopt for the current shape, else why the table is in the old one.
std::optional<std::string> OldShapeReason(const LeashTable& table,
                                          const TableSnapshot& snapshot);

// The guard table as AddGuard makes it: no set, a base chain `output` of type filter on the
// output hook and one `prerouting` on the prerouting hook, each holding one rule of exactly
// AddGuard's expressions. nullopt for that shape, else
// what differs (Prepare then replaces the table).
std::optional<std::string> GuardShapeReason(const TableSnapshot& snapshot);

}  // namespace leash::controlplane::nft
