#include "controlplane/nft_ruleset.h"

#include <arpa/inet.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/udata.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_tuple_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <linux/netfilter/nf_tables.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <functional>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "controlplane/route_rules.h"

namespace leash::controlplane::nft {
namespace {

using engine::IpAddress;
using engine::UidRange;

constexpr uint16_t kDnsPort = 53;
// nftables' BYTEORDER_BIG_ENDIAN, recorded in the map's user data so `nft list` prints the
// interval map's UIDs as numbers (nft does the same for `type uid; flags interval`).
constexpr uint32_t kBigEndian = 2;

struct ExprDeleter {
  void operator()(nftnl_expr* e) const { nftnl_expr_free(e); }
};
struct RuleDeleter {
  void operator()(nftnl_rule* r) const { nftnl_rule_free(r); }
};
struct ChainDeleter {
  void operator()(nftnl_chain* c) const { nftnl_chain_free(c); }
};
struct SetDeleter {
  void operator()(nftnl_set* s) const { nftnl_set_free(s); }
};
struct UdataDeleter {
  void operator()(nftnl_udata_buf* b) const { nftnl_udata_buf_free(b); }
};
using ExprPtr = std::unique_ptr<nftnl_expr, ExprDeleter>;
using RulePtr = std::unique_ptr<nftnl_rule, RuleDeleter>;

// A rule under construction: expressions are appended in order and owned by the rule.
class RuleBuilder {
 public:
  RuleBuilder(const LeashTable& table, const std::string& chain) : rule_(nftnl_rule_alloc()) {
    nftnl_rule_set_u32(rule_.get(), NFTNL_RULE_FAMILY, table.family);
    nftnl_rule_set_str(rule_.get(), NFTNL_RULE_TABLE, table.name);
    nftnl_rule_set_str(rule_.get(), NFTNL_RULE_CHAIN, chain.c_str());
  }

  RuleBuilder& Meta(uint32_t key) {
    ExprPtr e(nftnl_expr_alloc("meta"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_META_DREG, NFT_REG_1);
    return Add(std::move(e));
  }
  RuleBuilder& Cmp(uint32_t op, const void* data, uint32_t len) {
    ExprPtr e(nftnl_expr_alloc("cmp"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_CMP_OP, op);
    nftnl_expr_set(e.get(), NFTNL_EXPR_CMP_DATA, data, len);
    return Add(std::move(e));
  }
  RuleBuilder& CmpEq(const void* data, uint32_t len) { return Cmp(NFT_CMP_EQ, data, len); }
  RuleBuilder& CmpEqU8(uint8_t value) { return CmpEq(&value, sizeof(value)); }
  RuleBuilder& CmpNeqU8(uint8_t value) { return Cmp(NFT_CMP_NEQ, &value, sizeof(value)); }
  // reg 1 = reg 1 & mask (one byte), as nft writes `x & mask == value`.
  RuleBuilder& MaskU8(uint8_t mask) {
    const uint8_t zero = 0;
    ExprPtr e(nftnl_expr_alloc("bitwise"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_LEN, sizeof(mask));
    nftnl_expr_set(e.get(), NFTNL_EXPR_BITWISE_MASK, &mask, sizeof(mask));
    nftnl_expr_set(e.get(), NFTNL_EXPR_BITWISE_XOR, &zero, sizeof(zero));
    return Add(std::move(e));
  }
  RuleBuilder& CmpEqU32(uint32_t value) { return CmpEq(&value, sizeof(value)); }
  RuleBuilder& Payload(uint32_t base, uint32_t offset, uint32_t len) {
    ExprPtr e(nftnl_expr_alloc("payload"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_PAYLOAD_BASE, base);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_PAYLOAD_OFFSET, offset);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_PAYLOAD_LEN, len);
    return Add(std::move(e));
  }
  // Transport header ports (TCP and UDP alike): source at offset 0, destination at 2.
  RuleBuilder& SourcePort() { return Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 2); }
  RuleBuilder& DestinationPort() { return Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2); }
  // TCP flags: 1 byte at offset 13.
  RuleBuilder& TcpFlags() { return Payload(NFT_PAYLOAD_TRANSPORT_HEADER, 13, 1); }
  RuleBuilder& PortNotInRange(uint16_t first, uint16_t last) {
    const uint16_t from = htons(first);
    const uint16_t to = htons(last);
    ExprPtr e(nftnl_expr_alloc("range"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_RANGE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_RANGE_OP, NFT_RANGE_NEQ);
    nftnl_expr_set(e.get(), NFTNL_EXPR_RANGE_FROM_DATA, &from, sizeof(from));
    nftnl_expr_set(e.get(), NFTNL_EXPR_RANGE_TO_DATA, &to, sizeof(to));
    return Add(std::move(e));
  }
  // As nft writes `th sport 18000-18999`: two compares, not a range expression.
  RuleBuilder& PortInRange(uint16_t first, uint16_t last) {
    const uint16_t from = htons(first);
    const uint16_t to = htons(last);
    return Cmp(NFT_CMP_GTE, &from, sizeof(from)).Cmp(NFT_CMP_LTE, &to, sizeof(to));
  }
  RuleBuilder& Counter() { return Add(ExprPtr(nftnl_expr_alloc("counter"))); }
  // `meta mark set meta mark or <bits>`: keeps every other bit of the packet's mark.
  RuleBuilder& OrMark(uint32_t bits) {
    Meta(NFT_META_MARK);
    const uint32_t keep = ~bits;
    ExprPtr e(nftnl_expr_alloc("bitwise"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_LEN, sizeof(uint32_t));
    nftnl_expr_set(e.get(), NFTNL_EXPR_BITWISE_MASK, &keep, sizeof(keep));
    nftnl_expr_set(e.get(), NFTNL_EXPR_BITWISE_XOR, &bits, sizeof(bits));
    Add(std::move(e));
    ExprPtr set(nftnl_expr_alloc("meta"));
    nftnl_expr_set_u32(set.get(), NFTNL_EXPR_META_KEY, NFT_META_MARK);
    nftnl_expr_set_u32(set.get(), NFTNL_EXPR_META_SREG, NFT_REG_1);
    return Add(std::move(set));
  }
  // `fib daddr type != local`: the destination is not this host (not loopback, not one of the
  // host's own addresses), looked up as the packet is now. Not `oif != "lo"`: the output device
  // a filter chain sees is the one routed before the nat chain ran, and a redirect (or another
  // table's dnat) re-routes the packet without changing it, so every redirected connection to a
  // remote address would look as if it left by that address's interface.
  RuleBuilder& DestinationNotThisHost() {
    ExprPtr e(nftnl_expr_alloc("fib"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_FIB_FLAGS, NFTA_FIB_F_DADDR);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_FIB_DREG, NFT_REG_1);
    Add(std::move(e));
    const uint32_t local = RTN_LOCAL;
    return Cmp(NFT_CMP_NEQ, &local, sizeof(local));
  }
  // `ct direction reply`: the packet flows against the connection's first packet, i.e. this
  // socket did not originate the connection. A packet without a conntrack entry (untracked,
  // invalid) does not match.
  RuleBuilder& CtDirectionReply() {
    ExprPtr e(nftnl_expr_alloc("ct"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_CT_KEY, NFT_CT_DIRECTION);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_CT_DREG, NFT_REG_1);
    Add(std::move(e));
    return CmpEqU8(IP_CT_DIR_REPLY);
  }
  // The conntrack label that marks a connection as inbound service Leash refused (nftables'
  // labels are a 128-bit field per connection; see kInboundLabelBit).
  static std::array<uint8_t, 16> InboundLabel() {
    std::array<uint8_t, 16> label{};
    label[kInboundLabelBit / 8] = static_cast<uint8_t>(1u << (kInboundLabelBit % 8));
    return label;
  }
  // `ct label set <bit>`: adds the bit, keeping any other label the connection has.
  RuleBuilder& CtSetInboundLabel() {
    const std::array<uint8_t, 16> label = InboundLabel();
    ExprPtr imm(nftnl_expr_alloc("immediate"));
    nftnl_expr_set_u32(imm.get(), NFTNL_EXPR_IMM_DREG, NFT_REG_1);
    nftnl_expr_set(imm.get(), NFTNL_EXPR_IMM_DATA, label.data(), label.size());
    Add(std::move(imm));
    ExprPtr ct(nftnl_expr_alloc("ct"));
    nftnl_expr_set_u32(ct.get(), NFTNL_EXPR_CT_KEY, NFT_CT_LABELS);
    nftnl_expr_set_u32(ct.get(), NFTNL_EXPR_CT_SREG, NFT_REG_1);
    return Add(std::move(ct));
  }
  // `ct label <bit>`: the connection carries the label.
  RuleBuilder& CtHasInboundLabel() {
    const std::array<uint8_t, 16> label = InboundLabel();
    const std::array<uint8_t, 16> zero{};
    ExprPtr ct(nftnl_expr_alloc("ct"));
    nftnl_expr_set_u32(ct.get(), NFTNL_EXPR_CT_KEY, NFT_CT_LABELS);
    nftnl_expr_set_u32(ct.get(), NFTNL_EXPR_CT_DREG, NFT_REG_1);
    Add(std::move(ct));
    ExprPtr e(nftnl_expr_alloc("bitwise"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BITWISE_LEN, label.size());
    nftnl_expr_set(e.get(), NFTNL_EXPR_BITWISE_MASK, label.data(), label.size());
    nftnl_expr_set(e.get(), NFTNL_EXPR_BITWISE_XOR, zero.data(), zero.size());
    Add(std::move(e));
    return Cmp(NFT_CMP_NEQ, zero.data(), zero.size());
  }
  // A rule comment (what `nft list` prints as `comment "..."`): how ReadCounters finds the
  // rules whose counters `leash status` reports.
  RuleBuilder& Comment(const char* text) {
    std::unique_ptr<nftnl_udata_buf, UdataDeleter> udata(
        nftnl_udata_buf_alloc(NFTNL_UDATA_COMMENT_MAXLEN + 8));
    nftnl_udata_put_strz(udata.get(), NFTNL_UDATA_RULE_COMMENT, text);
    nftnl_rule_set_data(rule_.get(), NFTNL_RULE_USERDATA, nftnl_udata_buf_data(udata.get()),
                        nftnl_udata_buf_len(udata.get()));
    return *this;
  }
  RuleBuilder& Verdict(int verdict) {
    ExprPtr e(nftnl_expr_alloc("immediate"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(verdict));
    return Add(std::move(e));
  }
  RuleBuilder& RedirectToPort(uint16_t port) {
    const uint16_t port_be = htons(port);
    ExprPtr imm(nftnl_expr_alloc("immediate"));
    nftnl_expr_set_u32(imm.get(), NFTNL_EXPR_IMM_DREG, NFT_REG_1);
    nftnl_expr_set(imm.get(), NFTNL_EXPR_IMM_DATA, &port_be, sizeof(port_be));
    Add(std::move(imm));
    ExprPtr redir(nftnl_expr_alloc("redir"));
    nftnl_expr_set_u32(redir.get(), NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
    nftnl_expr_set_u32(redir.get(), NFTNL_EXPR_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
    return Add(std::move(redir));
  }
  // `reject with icmpx type port-unreachable` (inet): the sender's socket sees ECONNREFUSED
  // at once rather than waiting out its timeout.
  RuleBuilder& RejectWithPortUnreachable() {
    ExprPtr e(nftnl_expr_alloc("reject"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH);
    nftnl_expr_set_u8(e.get(), NFTNL_EXPR_REJECT_CODE, NFT_REJECT_ICMPX_PORT_UNREACH);
    return Add(std::move(e));
  }
  RuleBuilder& RejectWithTcpReset() {
    ExprPtr e(nftnl_expr_alloc("reject"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_TCP_RST);
    nftnl_expr_set_u8(e.get(), NFTNL_EXPR_REJECT_CODE, 0);
    return Add(std::move(e));
  }
  // An interval map compares keys as bytes: the UID goes big-endian first (`nft` emits the same
  // `byteorder reg 1 = hton(reg 1, 4, 4)` for `meta skuid vmap` on an interval map).
  RuleBuilder& HostToNetwork32() {
    ExprPtr e(nftnl_expr_alloc("byteorder"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BYTEORDER_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BYTEORDER_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BYTEORDER_OP, NFT_BYTEORDER_HTON);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BYTEORDER_LEN, 4);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_BYTEORDER_SIZE, 4);
    return Add(std::move(e));
  }
  // `rt <key>` of the packet's route into reg 1.
  RuleBuilder& Rt(uint32_t key) {
    ExprPtr e(nftnl_expr_alloc("rt"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_RT_KEY, key);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_RT_DREG, NFT_REG_1);
    return Add(std::move(e));
  }
  // `oifname "<name>"`: nft compares the whole IFNAMSIZ buffer, zero-padded.
  RuleBuilder& OutputDeviceNamed(const char* name) {
    char padded[IFNAMSIZ] = {};
    std::strncpy(padded, name, sizeof(padded) - 1);
    return Meta(NFT_META_OIFNAME).CmpEq(padded, sizeof(padded));
  }
  // The lookup of the agents map keyed by `sreg` (four bytes, big-endian).
  RuleBuilder& VmapLookup(uint32_t set_id, uint32_t sreg = NFT_REG_1) {
    ExprPtr e(nftnl_expr_alloc("lookup"));
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_LOOKUP_SREG, sreg);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_LOOKUP_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_str(e.get(), NFTNL_EXPR_LOOKUP_SET, kAgentsMap);
    nftnl_expr_set_u32(e.get(), NFTNL_EXPR_LOOKUP_SET_ID, set_id);
    return Add(std::move(e));
  }

  nftnl_rule* rule() { return rule_.get(); }

 private:
  RuleBuilder& Add(ExprPtr e) {
    nftnl_rule_add_expr(rule_.get(), e.release());
    return *this;
  }
  RulePtr rule_;
};

std::unique_ptr<nftnl_set, SetDeleter> MapRef(const LeashTable& table) {
  std::unique_ptr<nftnl_set, SetDeleter> set(nftnl_set_alloc());
  nftnl_set_set_u32(set.get(), NFTNL_SET_FAMILY, table.family);
  nftnl_set_set_str(set.get(), NFTNL_SET_TABLE, table.name);
  nftnl_set_set_str(set.get(), NFTNL_SET_NAME, kAgentsMap);
  return set;
}

// One element of the interval map: the first UID of an interval, or (interval_end) the UID one
// past its last. Keys are big-endian, as the dispatch rule's byteorder makes the socket's UID.
nftnl_set_elem* IntervalElement(uint32_t key, bool interval_end) {
  nftnl_set_elem* element = nftnl_set_elem_alloc();
  const uint32_t big_endian = htonl(key);
  nftnl_set_elem_set(element, NFTNL_SET_ELEM_KEY, &big_endian, sizeof(big_endian));
  if (interval_end) nftnl_set_elem_set_u32(element, NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
  return element;
}

// The elements of an interval, in the order nft sends them: its start (with the verdict, when
// adding), then its end, unless the interval runs to the last UID (nothing is past it).
void AddIntervalElements(nftnl_set* map, const UidRange& range, const char* jump_chain) {
  nftnl_set_elem* start = IntervalElement(range.first, false);
  if (jump_chain != nullptr) {
    nftnl_set_elem_set_u32(start, NFTNL_SET_ELEM_VERDICT, static_cast<uint32_t>(NFT_JUMP));
    nftnl_set_elem_set_str(start, NFTNL_SET_ELEM_CHAIN, jump_chain);
  }
  nftnl_set_elem_add(map, start);
  if (range.last != UINT32_MAX) nftnl_set_elem_add(map, IntervalElement(range.last + 1, true));
}

// One subject's intervals, for a NEWSETELEM or DELSETELEM message.
struct OwnedInterval {
  uint32_t owner;
  UidRange range;
};

// Intervals per message: two elements of ~60 bytes each, well inside
// NftBatch::kMaxMessageBytes, and a 1,000-subject startup sends a few messages per map.
constexpr size_t kIntervalsPerMessage = 128;

void ForEachIntervalChunk(const std::vector<OwnedInterval>& intervals,
                          const std::function<void(absl::Span<const OwnedInterval>)>& fn) {
  for (size_t i = 0; i < intervals.size(); i += kIntervalsPerMessage) {
    fn(absl::MakeConstSpan(intervals).subspan(i, kIntervalsPerMessage));
  }
}

// "element 1001" or "elements 1001..100000-165535 (3)", for error messages.
std::string ElementsLabel(absl::Span<const OwnedInterval> intervals) {
  if (intervals.size() == 1) return absl::StrCat("element ", engine::FormatUidRange(intervals.front().range));
  return absl::StrCat("elements ", engine::FormatUidRange(intervals.front().range), "..",
                      engine::FormatUidRange(intervals.back().range), " (", intervals.size(), ")");
}

std::string PortRange() { return absl::StrCat(kProxyPortFirst, "-", kProxyPortLast); }

// `ip daddr 127.0.0.0/8` (`ip6 daddr ::1` for v6) on `rule`; in the inet filter table the match
// first names its family (`meta nfproto`).
void MatchLoopback(RuleBuilder& rule, const LeashTable& table, bool v4) {
  if (table.family == NFPROTO_INET) {
    rule.Meta(NFT_META_NFPROTO).CmpEqU8(v4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
  }
  if (v4) {
    // ip daddr 127.0.0.0/8: nft compiles the /8 to a one-byte compare.
    rule.Payload(NFT_PAYLOAD_NETWORK_HEADER, 16, 1).CmpEqU8(127);
  } else {
    rule.Payload(NFT_PAYLOAD_NETWORK_HEADER, 24, 16).CmpEq(&in6addr_loopback, 16);
  }
}

const char* LoopbackText(bool v4) { return v4 ? "ip daddr 127.0.0.0/8" : "ip6 daddr ::1"; }
const char* ProtocolText(uint8_t protocol) { return protocol == IPPROTO_UDP ? "udp" : "tcp"; }

// `ip daddr 127.0.0.0/8 tcp dport != 18000-18999 return` (`ip6 daddr ::1 ...` for v6): a
// local service is exempt, the proxy range is not.
void AddLoopbackExemption(NftBatch& batch, const LeashTable& table, const std::string& chain,
                          bool v4) {
  RuleBuilder exempt(table, chain);
  MatchLoopback(exempt, table, v4);
  exempt.Meta(NFT_META_L4PROTO)
      .CmpEqU8(IPPROTO_TCP)
      .DestinationPort()
      .PortNotInRange(kProxyPortFirst, kProxyPortLast)
      .Counter()
      .Verdict(NFT_RETURN);
  batch.AddRule(exempt.rule(),
                absl::StrCat("add rule `", LoopbackText(v4), " tcp dport != ", PortRange(),
                             " return` to ", table.Label(), " ", chain));
}

// `ip daddr 127.0.0.0/8 <udp|tcp> dport 53` (`ip6 daddr ::1 ...`) on `rule`: DNS to any
// loopback address, whichever resolver of this host answers there.
void MatchLoopbackDns(RuleBuilder& rule, const LeashTable& table, bool v4, uint8_t protocol) {
  const uint16_t dport = htons(kDnsPort);
  MatchLoopback(rule, table, v4);
  rule.Meta(NFT_META_L4PROTO).CmpEqU8(protocol).DestinationPort().CmpEq(&dport, sizeof(dport));
}

// The subject's resolvers of this table's family, unmapped and without repeats.
std::vector<IpAddress> ResolversOf(const NetfilterSubject& subject, uint16_t family) {
  std::vector<IpAddress> out;
  for (const IpAddress& raw : subject.dns_resolvers) {
    const IpAddress resolver = engine::UnmapV4(raw);
    const bool v4 = resolver.family == IpAddress::Family::kV4;
    if (family != NFPROTO_INET && v4 != (family == NFPROTO_IPV4)) continue;
    if (std::find(out.begin(), out.end(), resolver) != out.end()) continue;
    out.push_back(resolver);
  }
  return out;
}

// `ip daddr <resolver> <udp|tcp> dport 53` (ip6 daddr in ip6 leash; `meta nfproto` first in the
// inet table) on `rule`.
void MatchResolver(RuleBuilder& rule, const LeashTable& table, const IpAddress& resolver,
                   uint8_t protocol) {
  const bool v4 = resolver.family == IpAddress::Family::kV4;
  const uint16_t dport = htons(kDnsPort);
  if (table.family == NFPROTO_INET) rule.Meta(NFT_META_NFPROTO).CmpEqU8(v4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
  rule.Payload(NFT_PAYLOAD_NETWORK_HEADER, v4 ? 16 : 24, v4 ? 4 : 16)
      .CmpEq(resolver.bytes.data(), v4 ? 4 : 16)
      .Meta(NFT_META_L4PROTO)
      .CmpEqU8(protocol)
      .DestinationPort()
      .CmpEq(&dport, sizeof(dport));
}

// network.dns: filter — DNS to the resolvers, UDP and TCP, goes to the subject's own DNS
// listener in the proxy (the UDP socket and the TCP listener on its port), and so does DNS to
// every loopback address, the resolvers' or not: a host's local resolvers answer on more
// addresses than resolv.conf names (systemd-resolved on 127.0.0.53 and 127.0.0.54, dnsmasq or
// unbound on 127.0.0.1), and each is a way to the same upstream. Before the loopback
// exemption, which would otherwise let TCP DNS to them past the filter (docs/ARCHITECTURE.md,
// rule N15). The filter forwards to the subject's resolvers, wherever the agent aimed.
void AddDnsRedirects(NftBatch& batch, const LeashTable& table, const std::string& chain,
                     const NetfilterSubject& subject) {
  if (!subject.dns_filter) return;
  const char* family = table.family == NFPROTO_IPV4 ? "ip" : "ip6";
  for (const IpAddress& resolver : ResolversOf(subject, table.family)) {
    if (engine::IsLoopbackAddress(resolver)) continue;  // the loopback rules below hold it
    for (uint8_t protocol : {IPPROTO_UDP, IPPROTO_TCP}) {
      RuleBuilder redirect(table, chain);
      MatchResolver(redirect, table, resolver, protocol);
      redirect.Counter().RedirectToPort(subject.port);
      batch.AddRule(redirect.rule(),
                    absl::StrCat("add rule `", family, " daddr ", engine::FormatIpAddress(resolver),
                                 " ", ProtocolText(protocol), " dport 53 redirect to :",
                                 subject.port, "` to ", table.Label(), " ", chain));
    }
  }
  const bool v4 = table.family == NFPROTO_IPV4;
  for (uint8_t protocol : {IPPROTO_UDP, IPPROTO_TCP}) {
    RuleBuilder redirect(table, chain);
    MatchLoopbackDns(redirect, table, v4, protocol);
    redirect.Counter().RedirectToPort(subject.port);
    batch.AddRule(redirect.rule(),
                  absl::StrCat("add rule `", LoopbackText(v4), " ", ProtocolText(protocol),
                               " dport 53 redirect to :", subject.port, "` to ", table.Label(),
                               " ", chain));
  }
}

void AddRedirectRules(NftBatch& batch, const LeashTable& table, const std::string& chain,
                      const NetfilterSubject& subject) {
  // Loopback (a local service) is exempt, except the proxy range: an attempt at another
  // subject's listener falls through to this UID's own redirect (docs/ARCHITECTURE.md,
  // rule N7: the loopback exemption excludes the proxy port range 18000-18999).
  // No port (the refuse-all chain): nothing to redirect to; the filter chain refuses it all.
  if (subject.port == 0) {
    AddLoopbackExemption(batch, table, chain, table.family == NFPROTO_IPV4);
    return;
  }
  AddDnsRedirects(batch, table, chain, subject);
  AddLoopbackExemption(batch, table, chain, table.family == NFPROTO_IPV4);
  RuleBuilder redirect(table, chain);
  redirect.Meta(NFT_META_L4PROTO).CmpEqU8(IPPROTO_TCP).Counter().RedirectToPort(subject.port);
  batch.AddRule(redirect.rule(), absl::StrCat("add rule `meta l4proto tcp redirect to :",
                                              subject.port, "` to ", table.Label(), " ", chain));
}

// DNS past the UDP drop (not under network.udp: allow, where all UDP returns). Under
// network.dns: filter, only what the nat chain redirected to this subject's own DNS socket
// (127.0.0.1:<port>, [::1]:<port>: the filter hook sees the packet after the redirect), and
// nothing while its listener is not bound (the port may be someone else's). Under
// network.dns: resolvers, UDP/53 to the resolvers themselves. UDP/53 anywhere else is a tunnel
// and stays closed.
void AddDnsRules(NftBatch& batch, const LeashTable& table, const std::string& chain,
                 const NetfilterSubject& subject) {
  if (subject.udp_allowed || subject.port == 0) return;
  if (subject.dns_filter) {
    // Loopback DNS is redirected here with or without resolvers (the filter answers a subject
    // that has none, and says why in its decision line).
    if (subject.refuse_tcp) return;
    const uint16_t port = htons(subject.port);
    for (bool v4 : {true, false}) {
      RuleBuilder own(table, chain);
      own.Meta(NFT_META_NFPROTO).CmpEqU8(v4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
      if (v4) {
        const uint32_t loopback = htonl(INADDR_LOOPBACK);
        own.Payload(NFT_PAYLOAD_NETWORK_HEADER, 16, 4).CmpEq(&loopback, 4);
      } else {
        own.Payload(NFT_PAYLOAD_NETWORK_HEADER, 24, 16).CmpEq(&in6addr_loopback, 16);
      }
      own.Meta(NFT_META_L4PROTO)
          .CmpEqU8(IPPROTO_UDP)
          .DestinationPort()
          .CmpEq(&port, sizeof(port))
          .Counter()
          .Verdict(NFT_RETURN);
      batch.AddRule(own.rule(), absl::StrCat("add rule `", v4 ? "ip daddr 127.0.0.1" : "ip6 daddr ::1",
                                             " udp dport ", subject.port, " return` to ",
                                             table.Label(), " ", chain));
    }
    return;
  }
  for (const IpAddress& resolver : ResolversOf(subject, table.family)) {
    if (engine::IsLoopbackAddress(resolver)) continue;  // returned by AddLoopbackDnsRules
    RuleBuilder dns(table, chain);
    MatchResolver(dns, table, resolver, IPPROTO_UDP);
    dns.Counter().Verdict(NFT_RETURN);
    batch.AddRule(dns.rule(),
                  absl::StrCat("add rule `", resolver.family == IpAddress::Family::kV4 ? "ip" : "ip6",
                               " daddr ", engine::FormatIpAddress(resolver),
                               " udp dport 53 return` to ", table.Label(), " ", chain));
  }
}

// What this UID sends to a destination off this host by any way but the proxy. Every TCP
// connection it originates goes to this host: the nat chain redirects it to the proxy on
// loopback, or it was bound for a loopback address to begin with. So its TCP to a destination
// off the host is one of two things:
//  - inbound service: a peer off the host connected to a listener of this UID, and this is the
//    SYN-ACK or data that answers it (conntrack's reply direction). Dropped unless
//    network.inbound is allow: the peer never completes a handshake.
//  - TCP that escaped the redirect: a packet conntrack could not track (invalid, untracked),
//    which no nat chain sees, or a connection another table's nat rule took first. Always
//    dropped: forwarding what the proxy never judged is not enforcement.
// The inbound rule covers every protocol, not only TCP: a reply-direction datagram to a peer
// off the host (UDP under network.udp: allow) is inbound service too. A peer on this host
// (loopback, or one of the host's own addresses) is served: local dev servers keep working.
// Like every rule here these see only packets whose socket still has an owner (`meta skuid`
// reads the credentials of the socket's file): what a socket sends after its process closed it
// is left to the guard table, which the inbound drop's label points at.
void AddOffHostRules(NftBatch& batch, const LeashTable& table, const std::string& chain,
                     const NetfilterSubject& subject) {
  RuleBuilder inbound(table, chain);
  // The direction first: most of what this chain sees is the UID's own connections.
  inbound.CtDirectionReply().DestinationNotThisHost();
  if (subject.inbound_allowed) {
    // network.inbound: allow — its TCP answers go out, counted; its answers by any other
    // protocol meet the rules below like any other packet.
    inbound.Meta(NFT_META_L4PROTO).CmpEqU8(IPPROTO_TCP).Counter().Verdict(NFT_RETURN);
    inbound.Comment(kInboundAllowComment);
  } else {
    // The connection is labelled as it is refused, so that what its socket still sends once
    // the process has closed it (no UID any more) is dropped by the guard table.
    inbound.CtSetInboundLabel().Counter().Verdict(NF_DROP).Comment(kInboundDropComment);
  }
  batch.AddRule(inbound.rule(),
                absl::StrCat("add rule `ct direction reply fib daddr type != local ",
                             subject.inbound_allowed ? "meta l4proto tcp return"
                                                     : "ct label set 127 drop",
                             "` to ", table.Label(), " ", chain));
  RuleBuilder unproxied(table, chain);
  unproxied.Meta(NFT_META_L4PROTO)
      .CmpEqU8(IPPROTO_TCP)
      .DestinationNotThisHost()
      .Counter()
      .Verdict(NF_DROP)
      .Comment(kUnproxiedDropComment);
  batch.AddRule(unproxied.rule(), absl::StrCat("add rule `meta l4proto tcp fib daddr type != "
                                               "local drop` to ", table.Label(), " ", chain));
}

// DNS to a loopback address that reaches the filter chain unredirected: refused (TCP reset,
// UDP port unreachable), before the UDP of network.udp: allow and the refused subject's
// loopback exemption can return it. Under network.dns: filter the nat chain has sent every
// such question to the subject's filter, so nothing is left here to match but what no nat
// chain saw. Under network.dns: resolvers (and for a subject with no policy, which has no
// filter) only the subject's own loopback resolvers are reached, over UDP and TCP: a local
// resolver on another loopback address is an unjudged way to the same upstream
// (docs/ARCHITECTURE.md, rule N15). Counted under kLoopbackDnsRefusedComment.
void AddLoopbackDnsRules(NftBatch& batch, const LeashTable& table, const std::string& chain,
                         const NetfilterSubject& subject) {
  if (!subject.dns_filter) {
    for (const IpAddress& resolver : ResolversOf(subject, table.family)) {
      if (!engine::IsLoopbackAddress(resolver)) continue;
      for (uint8_t protocol : {IPPROTO_UDP, IPPROTO_TCP}) {
        RuleBuilder own(table, chain);
        MatchResolver(own, table, resolver, protocol);
        own.Counter().Verdict(NFT_RETURN);
        const char* family = resolver.family == IpAddress::Family::kV4 ? "ip" : "ip6";
        batch.AddRule(own.rule(),
                      absl::StrCat("add rule `", family, " daddr ",
                                   engine::FormatIpAddress(resolver), " ", ProtocolText(protocol),
                                   " dport 53 return` to ", table.Label(), " ", chain));
      }
    }
  }
  for (bool v4 : {true, false}) {
    for (uint8_t protocol : {IPPROTO_UDP, IPPROTO_TCP}) {
      RuleBuilder refuse(table, chain);
      MatchLoopbackDns(refuse, table, v4, protocol);
      refuse.Counter();
      if (protocol == IPPROTO_TCP) {
        refuse.RejectWithTcpReset();
      } else {
        refuse.RejectWithPortUnreachable();
      }
      refuse.Comment(kLoopbackDnsRefusedComment);
      batch.AddRule(refuse.rule(),
                    absl::StrCat("add rule `", LoopbackText(v4), " ", ProtocolText(protocol),
                                 " dport 53 reject` to ", table.Label(), " ", chain));
    }
  }
}

// `table`'s hooked chain `output` on the output hook, policy accept: type nat at
// NF_IP_PRI_NAT_DST (-100, where `nft` puts `priority dstnat`) for the redirect tables, type
// filter at 0 otherwise.
void AddOutputChain(NftBatch& batch, const LeashTable& table) {
  std::unique_ptr<nftnl_chain, ChainDeleter> chain(nftnl_chain_alloc());
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_FAMILY, table.family);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TABLE, table.name);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_NAME, kDispatchChain);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TYPE, table.nat ? "nat" : "filter");
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
  nftnl_chain_set_s32(chain.get(), NFTNL_CHAIN_PRIO, table.nat ? -100 : 0);
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_POLICY, NF_ACCEPT);
  batch.AddChain(chain.get(), /*exclusive=*/false,
                 absl::StrCat("add chain ", kDispatchChain, " to table ", table.Label()));
}

// The filter chain: what the proxy cannot judge does not leave.
void AddFilterRules(NftBatch& batch, const LeashTable& table, const std::string& chain,
                    const NetfilterSubject& subject) {
  // A socket of this UID completing a handshake from a port of the proxy range is a listener
  // squatting there: a port the proxy has not bound yet (a subject being added, the proxy
  // respawning), which another subject's redirect then delivers to this one (rule N7 of
  // docs/ARCHITECTURE.md: those ports are Leash's). Its SYN-ACK goes through this chain (the
  // kernel owns a SYN-ACK to the listener's socket), so it never completes one. Only SYN-ACKs:
  // a connection this UID makes from such a port as an ephemeral one still works.
  constexpr uint8_t kSynAck = 0x02 | 0x10;  // TCP SYN | ACK
  RuleBuilder squat(table, chain);
  squat.Meta(NFT_META_L4PROTO)
      .CmpEqU8(IPPROTO_TCP)
      .SourcePort()
      .PortInRange(kProxyPortFirst, kProxyPortLast)
      .TcpFlags()
      .MaskU8(kSynAck)
      .CmpEqU8(kSynAck)
      .Counter()
      .Verdict(NF_DROP);
  batch.AddRule(squat.rule(),
                absl::StrCat("add rule `tcp sport ", PortRange(),
                             " tcp flags & (syn | ack) == syn | ack drop` to ", table.Label(), " ",
                             chain));
  AddOffHostRules(batch, table, chain, subject);
  AddLoopbackDnsRules(batch, table, chain, subject);
  if (subject.udp_allowed) {
    // network.udp: allow — UDP unfiltered, as a choice.
    RuleBuilder udp(table, chain);
    udp.Meta(NFT_META_L4PROTO).CmpEqU8(IPPROTO_UDP).Counter().Verdict(NFT_RETURN);
    batch.AddRule(udp.rule(), absl::StrCat("add rule `meta l4proto udp return` to ",
                                           table.Label(), " ", chain));
  }
  AddDnsRules(batch, table, chain, subject);
  if (subject.refuse_tcp) {
    // The listener is not bound, so the port the nat chain redirects to may be someone
    // else's: the redirected connection is reset here (the filter hook runs after the nat
    // one), local services stay reachable.
    AddLoopbackExemption(batch, table, chain, /*v4=*/true);
    AddLoopbackExemption(batch, table, chain, /*v4=*/false);
    RuleBuilder reject(table, chain);
    reject.Meta(NFT_META_L4PROTO).CmpEqU8(IPPROTO_TCP).Counter().RejectWithTcpReset();
    batch.AddRule(reject.rule(), absl::StrCat("add rule `meta l4proto tcp reject with tcp reset` "
                                              "to ", table.Label(), " ", chain));
  }
  // Everything but TCP (which the nat chain sent to the proxy) and what returned above is
  // dropped: UDP, and also ICMP echo from an unprivileged ping socket, UDP-Lite, SCTP — none of
  // which needs CAP_NET_RAW (docs/ARCHITECTURE.md, rule N10: what the proxy cannot judge
  // does not leave).
  RuleBuilder drop(table, chain);
  drop.Meta(NFT_META_L4PROTO).CmpNeqU8(IPPROTO_TCP).Counter().Verdict(NF_DROP);
  batch.AddRule(drop.rule(),
                absl::StrCat("add rule `meta l4proto != tcp drop` to ", table.Label(), " ", chain));
}


}  // namespace

std::string LeashTable::Label() const {
  const char* family_name = family == NFPROTO_IPV4   ? "ip"
                            : family == NFPROTO_IPV6 ? "ip6"
                                                     : "inet";
  return absl::StrCat(family_name, " ", name);
}

const std::vector<LeashTable>& LeashTables() {
  static const std::vector<LeashTable>* const tables = new std::vector<LeashTable>{
      {NFPROTO_IPV4, kNatTable, true},
      {NFPROTO_IPV6, kNatTable, true},
      {NFPROTO_INET, kFilterTable, false},
  };
  return *tables;
}

std::string AgentChainName(uint32_t uid) { return absl::StrCat("agent_", uid); }

std::optional<uint32_t> ParseAgentChainName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "agent_") || name.empty()) return std::nullopt;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint32_t uid = 0;
  if (!absl::SimpleAtoi(name, &uid)) return std::nullopt;
  // Only the canonical spelling: agent_01001 is not a chain Leash made, and Release(1001)
  // would not find it by name.
  if (absl::StrCat(uid) != name) return std::nullopt;
  return uid;
}

void TallyCounters(const nftnl_rule* rule, NetfilterCounters& counters) {
  if (!nftnl_rule_is_set(rule, NFTNL_RULE_USERDATA)) return;
  uint32_t len = 0;
  const char* data = static_cast<const char*>(nftnl_rule_get_data(rule, NFTNL_RULE_USERDATA, &len));
  std::string comment;
  const nftnl_udata* attr = nullptr;
  nftnl_udata_for_each_data(data, len, attr) {
    if (nftnl_udata_type(attr) != NFTNL_UDATA_RULE_COMMENT) continue;
    const char* value = static_cast<const char*>(nftnl_udata_get(attr));
    const uint8_t value_len = nftnl_udata_len(attr);
    // strz: the stored length counts the terminating NUL.
    comment.assign(value, value_len > 0 && value[value_len - 1] == '\0' ? value_len - 1
                                                                          : value_len);
  }
  uint64_t* target = comment == kInboundDropComment    ? &counters.inbound_dropped_packets
                     : comment == kInboundAllowComment  ? &counters.inbound_allowed_packets
                     : comment == kUnproxiedDropComment ? &counters.unproxied_dropped_packets
                     : comment == kLoopbackDnsRefusedComment
                         ? &counters.loopback_dns_refused_packets
                         : nullptr;
  if (target == nullptr) return;
  nftnl_expr_iter* it = nftnl_expr_iter_create(rule);
  for (nftnl_expr* e = nftnl_expr_iter_next(it); e != nullptr; e = nftnl_expr_iter_next(it)) {
    if (std::strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "counter") == 0) {
      *target += nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS);
    }
  }
  nftnl_expr_iter_destroy(it);
}

const LeashTable& GuardTable() {
  static const LeashTable* const table = new LeashTable{NFPROTO_INET, kGuardTable, false};
  return *table;
}

void AddGuard(NftBatch& batch) {
  const LeashTable& table = GuardTable();
  const std::string label = table.Label();
  batch.AddTable(table.family, table.name, absl::StrCat("add table ", label));
  AddOutputChain(batch, table);
  // Every packet of the host passes here: the direction first, the cheapest test that most
  // packets fail.
  RuleBuilder guard(table, kDispatchChain);
  guard.CtDirectionReply()
      .CtHasInboundLabel()
      .DestinationNotThisHost()
      .Counter()
      .Verdict(NF_DROP)
      .Comment(kGuardDropComment);
  batch.AddRule(guard.rule(), absl::StrCat("add rule `ct direction reply ct label 127 fib daddr "
                                           "type != local drop` to ", label, " ",
                                           kDispatchChain));
  // The mark that policy routing refuses to a leashed listener (controlplane/route_rules.h):
  // TCP that arrives by any interface but lo, i.e. from off the host. A client on this host
  // reaches the host's own addresses over lo too, so it is the same "this host" as the output
  // rules' `fib daddr type != local`; a packet off the wire claiming a local source is marked
  // (refused), which fails closed. `iif` is one compare where a fib lookup per packet would
  // cost every TCP packet the host receives.
  std::unique_ptr<nftnl_chain, ChainDeleter> chain(nftnl_chain_alloc());
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_FAMILY, table.family);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TABLE, table.name);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_NAME, kGuardMarkChain);
  nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TYPE, "filter");
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_PRE_ROUTING);
  nftnl_chain_set_s32(chain.get(), NFTNL_CHAIN_PRIO, kGuardMarkPriority);
  nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_POLICY, NF_ACCEPT);
  batch.AddChain(chain.get(), /*exclusive=*/false,
                 absl::StrCat("add chain ", kGuardMarkChain, " to table ", label));
  constexpr uint32_t kLoopbackIfindex = 1;  // lo is interface 1 in every network namespace
  RuleBuilder mark(table, kGuardMarkChain);
  mark.Meta(NFT_META_L4PROTO)
      .CmpEqU8(IPPROTO_TCP)
      .Meta(NFT_META_IIF)
      .Cmp(NFT_CMP_NEQ, &kLoopbackIfindex, sizeof(kLoopbackIfindex))
      .OrMark(kInboundMark);
  batch.AddRule(mark.rule(), absl::StrCat("add rule `meta l4proto tcp iif != lo meta mark set "
                                          "meta mark or 0x", absl::Hex(kInboundMark), "` to ",
                                          label, " ", kGuardMarkChain));
}

void AddSkeleton(NftBatch& batch, const LeashTable& table, uint32_t set_id) {
  const std::string label = table.Label();
  batch.AddTable(table.family, table.name, absl::StrCat("add table ", label));

  std::unique_ptr<nftnl_set, SetDeleter> map = MapRef(table);
  nftnl_set_set_u32(map.get(), NFTNL_SET_FLAGS, NFT_SET_MAP | NFT_SET_INTERVAL);
  nftnl_set_set_u32(map.get(), NFTNL_SET_KEY_TYPE, kNftTypeUid);
  nftnl_set_set_u32(map.get(), NFTNL_SET_KEY_LEN, sizeof(uint32_t));
  nftnl_set_set_u32(map.get(), NFTNL_SET_DATA_TYPE, NFT_DATA_VERDICT);
  nftnl_set_set_u32(map.get(), NFTNL_SET_ID, set_id);
  std::unique_ptr<nftnl_udata_buf, UdataDeleter> udata(nftnl_udata_buf_alloc(64));
  nftnl_udata_put_u32(udata.get(), NFTNL_UDATA_SET_KEYBYTEORDER, kBigEndian);
  nftnl_set_set_data(map.get(), NFTNL_SET_USERDATA, nftnl_udata_buf_data(udata.get()),
                     nftnl_udata_buf_len(udata.get()));
  batch.AddSet(map.get(), absl::StrCat("add map ", kAgentsMap, " to table ", label));

  AddOutputChain(batch, table);

  RuleBuilder dispatch(table, kDispatchChain);
  dispatch.Meta(NFT_META_SKUID).HostToNetwork32().VmapLookup(set_id);
  batch.AddRule(dispatch.rule(), absl::StrCat("add rule `meta skuid vmap @", kAgentsMap,
                                              "` to ", label, " ", kDispatchChain));
  if (table.nat) return;
  // What a subject's counted refusal routes to the refusal device has no UID when no process
  // owns it; its route names the subject (route_rules.h). Every other packet fails the first
  // compare.
  RuleBuilder realm(table, kDispatchChain);
  realm.OutputDeviceNamed(kRefusalDevice)
      .Meta(NFT_META_NFPROTO)
      .CmpEqU8(NFPROTO_IPV4)
      .Meta(NFT_META_RTCLASSID)
      .HostToNetwork32()
      .VmapLookup(set_id);
  batch.AddRule(realm.rule(), absl::StrCat("add rule `oifname \"", kRefusalDevice,
                                           "\" meta nfproto ipv4 meta rtclassid vmap @",
                                           kAgentsMap, "` to ", label, " ", kDispatchChain));
  // The next hop's last four bytes are the UID, big-endian like the map's keys: the lookup
  // reads them from the last 32-bit register of the address.
  RuleBuilder hop(table, kDispatchChain);
  hop.OutputDeviceNamed(kRefusalDevice)
      .Meta(NFT_META_NFPROTO)
      .CmpEqU8(NFPROTO_IPV6)
      .Rt(NFT_RT_NEXTHOP6)
      .CmpEq(kRefusalGatewayPrefix6, sizeof(kRefusalGatewayPrefix6))
      .VmapLookup(set_id, NFT_REG32_03);
  batch.AddRule(hop.rule(), absl::StrCat("add rule `oifname \"", kRefusalDevice,
                                         "\" meta nfproto ipv6 rt ip6 nexthop & <prefix> : "
                                         "vmap @", kAgentsMap, " on its last 32 bits` to ",
                                         label, " ", kDispatchChain));
}

void ApplySubjects(NftBatch& batch, const LeashTable& table,
                   const std::vector<NetfilterSubject>& subjects,
                   const PresentIntervals& elements_present,
                   const std::set<uint32_t>& chains_present) {
  PresentIntervals stale_elements;
  std::vector<uint32_t> stale_chains;
  std::vector<OwnedInterval> intervals;
  std::set<uint32_t> in_batch;
  for (const NetfilterSubject& subject : subjects) {
    in_batch.insert(subject.uid);
    for (const UidRange& range : DispatchedUids(subject)) intervals.push_back({subject.uid, range});
    if (auto it = elements_present.find(subject.uid); it != elements_present.end()) {
      stale_elements[subject.uid] = it->second;
    }
    if (chains_present.count(subject.uid) > 0) stale_chains.push_back(subject.uid);
  }
  // leashd makes the subjects' UIDs disjoint before they come here, so an interval of another
  // chain that overlaps one being added is stale: a UID that left before a crash with no
  // teardown, whose range the account database has since given to someone else. It goes in
  // the same batch; otherwise the kernel would refuse the new claim and leave the new subject
  // with no chain at all.
  for (const auto& [owner, present] : elements_present) {
    if (in_batch.count(owner) > 0) continue;
    for (const UidRange& range : present) {
      const bool claimed = std::any_of(intervals.begin(), intervals.end(),
                                       [&](const OwnedInterval& i) { return i.range.Overlaps(range); });
      if (claimed) stale_elements[owner].push_back(range);
    }
  }
  // A replace deletes exactly this UID's elements and chain and re-adds them in the same
  // transaction: no moment without the UID's rules, and no other UID's objects touched.
  ReleaseSubjects(batch, table, stale_elements, stale_chains);
  for (const NetfilterSubject& subject : subjects) {
    const std::string name = AgentChainName(subject.uid);
    std::unique_ptr<nftnl_chain, ChainDeleter> chain(nftnl_chain_alloc());
    nftnl_chain_set_u32(chain.get(), NFTNL_CHAIN_FAMILY, table.family);
    nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_TABLE, table.name);
    nftnl_chain_set_str(chain.get(), NFTNL_CHAIN_NAME, name.c_str());
    batch.AddChain(chain.get(), /*exclusive=*/true,
                   absl::StrCat("add chain ", name, " to table ", table.Label()));
    if (table.nat) {
      AddRedirectRules(batch, table, name, subject);
    } else {
      AddFilterRules(batch, table, name, subject);
    }
  }
  ForEachIntervalChunk(intervals, [&](absl::Span<const OwnedInterval> chunk) {
    std::unique_ptr<nftnl_set, SetDeleter> map = MapRef(table);
    for (const OwnedInterval& interval : chunk) {
      AddIntervalElements(map.get(), interval.range, AgentChainName(interval.owner).c_str());
    }
    batch.AddElements(map.get(), absl::StrCat("add ", ElementsLabel(chunk),
                                              " : jump agent_<uid> to map ", table.Label(), " ",
                                              kAgentsMap));
  });
}

void ReleaseSubjects(NftBatch& batch, const LeashTable& table, const PresentIntervals& elements,
                     const std::vector<uint32_t>& chain_uids) {
  std::vector<OwnedInterval> intervals;
  for (const auto& [owner, ranges] : elements) {
    for (const UidRange& range : ranges) intervals.push_back({owner, range});
  }
  ForEachIntervalChunk(intervals, [&](absl::Span<const OwnedInterval> chunk) {
    std::unique_ptr<nftnl_set, SetDeleter> map = MapRef(table);
    for (const OwnedInterval& interval : chunk) {
      AddIntervalElements(map.get(), interval.range, /*jump_chain=*/nullptr);
    }
    batch.DeleteElements(map.get(), absl::StrCat("delete ", ElementsLabel(chunk), " from map ",
                                                 table.Label(), " ", kAgentsMap));
  });
  for (uint32_t uid : chain_uids) {
    const std::string name = AgentChainName(uid);
    batch.DeleteChain(table.family, table.name, name,
                      absl::StrCat("delete chain ", name, " from table ", table.Label()));
  }
}

PresentIntervals PairDumpedElements(std::vector<DumpedElement> elements) {
  // By key; at one key an interval's end sorts before the next interval's start.
  std::sort(elements.begin(), elements.end(), [](const DumpedElement& a, const DumpedElement& b) {
    return a.key != b.key ? a.key < b.key : a.interval_end > b.interval_end;
  });
  PresentIntervals present;
  for (size_t i = 0; i < elements.size(); ++i) {
    const DumpedElement& start = elements[i];
    if (start.interval_end) continue;
    const std::optional<uint32_t> owner = ParseAgentChainName(start.jump_chain);
    if (!owner) continue;  // not Leash's: nothing Release would delete
    // Its end is the next element if that is an end; otherwise it runs to the last UID.
    uint32_t last = UINT32_MAX;
    if (i + 1 < elements.size() && elements[i + 1].interval_end && elements[i + 1].key > 0) {
      last = elements[i + 1].key - 1;
    }
    present[*owner].push_back({start.key, last});
  }
  return present;
}

std::optional<std::string> GuardShapeReason(const TableSnapshot& snapshot) {
  if (!snapshot.sets.empty()) return std::string("it holds a set");
  if (snapshot.base_chains.size() != 2) {
    return absl::StrCat("it has ", snapshot.base_chains.size(), " hooked chains, not two");
  }
  // AddGuard's chains and rules, expression by expression.
  struct Expected {
    const char* name;
    uint32_t hooknum;
    std::vector<const char*> expressions;
  };
  const Expected chains[] = {
      {kDispatchChain,
       NF_INET_LOCAL_OUT,
       {"ct", "cmp", "ct", "bitwise", "cmp", "fib", "cmp", "counter", "immediate"}},
      {kGuardMarkChain, NF_INET_PRE_ROUTING, {"meta", "cmp", "meta", "cmp", "meta", "bitwise", "meta"}},
  };
  for (const Expected& expected : chains) {
    const BaseChainSnapshot* base = nullptr;
    for (const BaseChainSnapshot& b : snapshot.base_chains) {
      if (b.name == expected.name) base = &b;
    }
    if (base == nullptr) return absl::StrCat("it has no hooked chain ", expected.name);
    if (base->type != "filter" || base->hooknum != expected.hooknum) {
      return absl::StrCat("its hooked chain is ", base->name, " (type ", base->type, ")");
    }
    if (base->rules.size() != 1 || base->rules.front().size() != expected.expressions.size()) {
      return absl::StrCat("its chain ", base->name, " holds ", base->rules.size(),
                          " rule(s) unlike the guard's");
    }
    for (size_t i = 0; i < expected.expressions.size(); ++i) {
      if (base->rules.front()[i].name != expected.expressions[i]) {
        return absl::StrCat("its rule in ", base->name, " differs from the guard's at expression ",
                            i);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> OldShapeReason(const LeashTable& table,
                                          const TableSnapshot& snapshot) {
  const std::string label = table.Label();
  bool has_map = false;
  for (const MapSnapshot& set : snapshot.sets) {
    if (set.name != kAgentsMap) continue;
    if ((set.flags & NFT_SET_MAP) == 0 || set.data_type != NFT_DATA_VERDICT ||
        set.key_len != sizeof(uint32_t)) {
      return absl::StrCat("its set ", kAgentsMap, " is not a uid : verdict map");
    }
    if ((set.flags & NFT_SET_INTERVAL) == 0) {
      return absl::StrCat("its map ", kAgentsMap, " holds single UIDs, not intervals (a "
                          "subject's subordinate UID ranges cannot be dispatched)");
    }
    has_map = true;
  }
  if (snapshot.base_chains.size() != 1) {
    if (snapshot.base_chains.empty()) return std::string("it has no hooked chain");
    return absl::StrCat("it has ", snapshot.base_chains.size(),
                        " hooked chains where the current shape has one");
  }
  const BaseChainSnapshot& base = snapshot.base_chains.front();
  const char* want_type = table.nat ? "nat" : "filter";
  if (base.name != kDispatchChain || base.type != want_type ||
      base.hooknum != NF_INET_LOCAL_OUT) {
    return absl::StrCat("its hooked chain is ", base.name, " (type ", base.type, ", hook ",
                        base.hooknum, "), not ", kDispatchChain, " (type ", want_type,
                        ", hook output)");
  }
  if (!has_map) {
    return absl::StrCat("it has no ", kAgentsMap, " map (UID rules sit in the hooked chain)");
  }
  const auto is_dispatch = [](const std::vector<ExprSnapshot>& rule) {
    return rule.size() == 3 && rule[0].name == "meta" && rule[0].meta_key == NFT_META_SKUID &&
           rule[0].dreg == NFT_REG_1 && rule[1].name == "byteorder" &&
           rule[1].byteorder_op == NFT_BYTEORDER_HTON && rule[1].sreg == NFT_REG_1 &&
           rule[1].dreg == NFT_REG_1 && rule[2].name == "lookup" && rule[2].set == kAgentsMap &&
           rule[2].sreg == NFT_REG_1 && rule[2].dreg == NFT_REG_VERDICT;
  };
  if (base.rules.empty()) {
    return absl::StrCat("its hooked chain ", kDispatchChain, " has no dispatch rule");
  }
  if (!is_dispatch(base.rules.front())) {
    return absl::StrCat("its hooked chain ", kDispatchChain, " holds ", base.rules.size(),
                        " rule(s) where the current shape has only `meta skuid vmap @",
                        kAgentsMap, "` (UID rules directly in the hooked chain)");
  }
  // The filter table also dispatches the refusal device's packets by their route (AddSkeleton).
  using Names = std::vector<std::string>;
  const std::vector<Names> refusal_dispatch =
      table.nat ? std::vector<Names>{}
                : std::vector<Names>{
                      {"meta", "cmp", "meta", "cmp", "meta", "byteorder", "lookup"},
                      {"meta", "cmp", "meta", "cmp", "rt", "cmp", "lookup"}};
  bool refusals_match = base.rules.size() == 1 + refusal_dispatch.size();
  for (size_t i = 0; refusals_match && i < refusal_dispatch.size(); ++i) {
    const std::vector<ExprSnapshot>& rule = base.rules[1 + i];
    Names names;
    for (const ExprSnapshot& e : rule) names.push_back(e.name);
    refusals_match = names == refusal_dispatch[i] && rule.back().set == kAgentsMap &&
                     rule.back().dreg == NFT_REG_VERDICT;
  }
  if (!refusals_match) {
    return absl::StrCat("its hooked chain ", kDispatchChain, " holds ", base.rules.size(),
                        " rule(s) where the current shape has ", 1 + refusal_dispatch.size(),
                        table.nat ? " (UID rules directly in the hooked chain)"
                                  : " (the dispatch of the refusal device's packets is missing)");
  }
  return std::nullopt;
}

}  // namespace leash::controlplane::nft
