// The messages the nft applier sends, checked without root: each rule Leash builds must carry
// exactly the expressions `nft` itself compiles for the equivalent text (captured with
// `nft --debug=netlink -f` on this machine's nftables 1.0.6), and the old-shape test must tell
// the current shape from every older one.
#include "controlplane/nft_ruleset.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controlplane/testing/fake_netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane::nft {
namespace {

using ::leash::controlplane::testing::MakeSubject;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Optional;

// One message of a finished batch, decoded.
struct Message {
  uint16_t type = 0;  // NFT_MSG_* (or NFNL_MSG_BATCH_*)
  uint16_t flags = 0;
  uint32_t seq = 0;
  uint8_t family = 0;
  std::string text;  // table/chain/set name, a rule's expressions, or elements
  const nlmsghdr* header = nullptr;
};

std::string RuleText(const nlmsghdr* h) {
  nftnl_rule* rule = nftnl_rule_alloc();
  EXPECT_GE(nftnl_rule_nlmsg_parse(h, rule), 0);
  std::string out = absl::StrCat(nftnl_rule_get_str(rule, NFTNL_RULE_CHAIN), ":");
  nftnl_expr_iter* it = nftnl_expr_iter_create(rule);
  for (nftnl_expr* e = nftnl_expr_iter_next(it); e != nullptr; e = nftnl_expr_iter_next(it)) {
    char buf[512];
    nftnl_expr_snprintf(buf, sizeof(buf), e, NFTNL_OUTPUT_DEFAULT, 0);
    absl::StrAppend(&out, " [ ", nftnl_expr_get_str(e, NFTNL_EXPR_NAME), " ", buf, "]");
  }
  nftnl_expr_iter_destroy(it);
  nftnl_rule_free(rule);
  return out;
}

// Decoded by hand with libmnl: libnftnl 1.2.4 numbers the element nests it builds 1, 2, 3...
// (the kernel does not care) but its own parser accepts only NFTA_LIST_ELEM, so it cannot read
// back a message of more than one element. Kernel dumps use NFTA_LIST_ELEM throughout.
std::vector<const nlattr*> Attrs(const void* start, int len) {
  std::vector<const nlattr*> out;
  for (const nlattr* a = static_cast<const nlattr*>(start); mnl_attr_ok(a, len);
       a = mnl_attr_next(a)) {
    out.push_back(a);
    len -= static_cast<int>(MNL_ALIGN(a->nla_len));
  }
  return out;
}
std::vector<const nlattr*> Nested(const nlattr* nest) {
  return Attrs(mnl_attr_get_payload(nest), static_cast<int>(mnl_attr_get_payload_len(nest)));
}

std::string ElementsText(const nlmsghdr* h) {
  std::string set;
  std::string out;
  for (const nlattr* attr :
       Attrs(mnl_nlmsg_get_payload_offset(h, sizeof(nfgenmsg)),
             static_cast<int>(mnl_nlmsg_get_payload_len(h) - sizeof(nfgenmsg)))) {
    const uint16_t type = mnl_attr_get_type(attr);
    if (type == NFTA_SET_ELEM_LIST_SET) set = mnl_attr_get_str(attr);
    if (type != NFTA_SET_ELEM_LIST_ELEMENTS) continue;
    for (const nlattr* element : Nested(attr)) {
      for (const nlattr* field : Nested(element)) {
        if (mnl_attr_get_type(field) == NFTA_SET_ELEM_KEY) {
          // Interval map keys are big-endian.
          const nlattr* value = Nested(field).front();
          EXPECT_EQ(mnl_attr_get_payload_len(value), 4u);
          absl::StrAppend(&out, " ", be32toh(mnl_attr_get_u32(value)));
        } else if (mnl_attr_get_type(field) == NFTA_SET_ELEM_FLAGS) {
          // An interval's end element, written after its key: " end 1002".
          if (be32toh(mnl_attr_get_u32(field)) & NFT_SET_ELEM_INTERVAL_END) {
            absl::StrAppend(&out, " end");
          }
        } else if (mnl_attr_get_type(field) == NFTA_SET_ELEM_DATA) {
          uint32_t code = 0;
          std::string chain;
          for (const nlattr* v : Nested(Nested(field).front())) {
            if (mnl_attr_get_type(v) == NFTA_VERDICT_CODE) code = be32toh(mnl_attr_get_u32(v));
            if (mnl_attr_get_type(v) == NFTA_VERDICT_CHAIN) chain = mnl_attr_get_str(v);
          }
          EXPECT_EQ(code, static_cast<uint32_t>(NFT_JUMP));
          absl::StrAppend(&out, " : jump ", chain);
        }
      }
    }
  }
  return set + ":" + out;
}

std::vector<Message> Decode(absl::string_view bytes) {
  std::vector<Message> out;
  int left = static_cast<int>(bytes.size());
  for (const nlmsghdr* h = reinterpret_cast<const nlmsghdr*>(bytes.data()); mnl_nlmsg_ok(h, left);
       h = mnl_nlmsg_next(h, &left)) {
    Message m;
    m.header = h;
    m.flags = h->nlmsg_flags;
    m.seq = h->nlmsg_seq;
    const auto* nfg = static_cast<const nfgenmsg*>(mnl_nlmsg_get_payload(h));
    m.family = nfg->nfgen_family;
    if (h->nlmsg_type == NFNL_MSG_BATCH_BEGIN || h->nlmsg_type == NFNL_MSG_BATCH_END) {
      m.type = h->nlmsg_type;
      out.push_back(m);
      continue;
    }
    EXPECT_EQ(h->nlmsg_type >> 8, NFNL_SUBSYS_NFTABLES);
    m.type = h->nlmsg_type & 0xff;
    switch (m.type) {
      case NFT_MSG_NEWTABLE:
      case NFT_MSG_DELTABLE: {
        nftnl_table* t = nftnl_table_alloc();
        EXPECT_GE(nftnl_table_nlmsg_parse(h, t), 0);
        m.text = nftnl_table_get_str(t, NFTNL_TABLE_NAME);
        nftnl_table_free(t);
        break;
      }
      case NFT_MSG_NEWCHAIN:
      case NFT_MSG_DELCHAIN: {
        nftnl_chain* c = nftnl_chain_alloc();
        EXPECT_GE(nftnl_chain_nlmsg_parse(h, c), 0);
        m.text = nftnl_chain_get_str(c, NFTNL_CHAIN_NAME);
        nftnl_chain_free(c);
        break;
      }
      case NFT_MSG_NEWSET: {
        nftnl_set* s = nftnl_set_alloc();
        EXPECT_GE(nftnl_set_nlmsg_parse(h, s), 0);
        m.text = nftnl_set_get_str(s, NFTNL_SET_NAME);
        nftnl_set_free(s);
        break;
      }
      case NFT_MSG_NEWRULE:
        m.text = RuleText(h);
        break;
      case NFT_MSG_NEWSETELEM:
      case NFT_MSG_DELSETELEM:
        m.text = ElementsText(h);
        break;
      default:
        ADD_FAILURE() << "unexpected message type " << m.type;
    }
    out.push_back(m);
  }
  return out;
}

// Messages of a batch as "TYPE family text" lines, BEGIN/END dropped.
std::vector<std::string> Commands(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const Message& m : messages) {
    if (m.type == NFNL_MSG_BATCH_BEGIN || m.type == NFNL_MSG_BATCH_END) continue;
    const char* name = m.type == NFT_MSG_NEWTABLE      ? "newtable"
                       : m.type == NFT_MSG_DELTABLE    ? "deltable"
                       : m.type == NFT_MSG_NEWCHAIN    ? "newchain"
                       : m.type == NFT_MSG_DELCHAIN    ? "delchain"
                       : m.type == NFT_MSG_NEWSET      ? "newset"
                       : m.type == NFT_MSG_NEWRULE     ? "newrule"
                       : m.type == NFT_MSG_NEWSETELEM  ? "newsetelem"
                       : m.type == NFT_MSG_DELSETELEM  ? "delsetelem"
                                                       : "?";
    out.push_back(absl::StrCat(name, " ", m.family, " ", m.text));
  }
  return out;
}

const LeashTable& Ip() { return LeashTables()[0]; }
const LeashTable& Ip6() { return LeashTables()[1]; }
const LeashTable& Inet() { return LeashTables()[2]; }

engine::IpAddress Addr(absl::string_view text) {
  std::optional<engine::IpAddress> a = engine::ParseIpAddress(text);
  EXPECT_TRUE(a.has_value()) << text;
  return a.value_or(engine::IpAddress{});
}

// The expressions `nft --debug=netlink` printed for the equivalent nft text.
constexpr char kDispatch[] =
    "output: [ meta load skuid => reg 1 ] [ byteorder reg 1 = hton(reg 1, 4, 4) ] "
    "[ lookup reg 1 set agents dreg 0 ]";
constexpr char kLoopbackExempt1001[] =
    "agent_1001: [ payload load 1b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0000007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] "
    "[ range neq reg 1 0x00005046 0x0000374a ] [ counter pkts 0 bytes 0 ] "
    "[ immediate reg 0 return ]";
constexpr char kLoopback6Exempt1001[] =
    "agent_1001: [ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] "
    "[ range neq reg 1 0x00005046 0x0000374a ] [ counter pkts 0 bytes 0 ] "
    "[ immediate reg 0 return ]";
constexpr char kRedirect1001To18001[] =
    "agent_1001: [ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";
constexpr char kDns10_0_0_53[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 4b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x3500000a ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";
constexpr char kDns2001_db8__53[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
    "[ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0xb80d0120 0x00000000 0x00000000 0x53000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";
constexpr char kSquatDrop1001[] =
    "agent_1001: [ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 0 => reg 1 ] "
    "[ cmp gte reg 1 0x00005046 ] [ cmp lte reg 1 0x0000374a ] "
    "[ payload load 1b @ transport header + 13 => reg 1 ] "
    "[ bitwise reg 1 = ( reg 1 & 0x00000012 ) ^ 0x00000000 ] [ cmp eq reg 1 0x00000012 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 drop ]";
constexpr char kInboundDrop1001[] =
    "agent_1001: [ ct load direction => reg 1 ] [ cmp eq reg 1 0x00000001 ] "
    "[ fib daddr type => reg 1 ] [ cmp neq reg 1 0x00000002 ] "
    "[ immediate reg 1 0x00000000 0x00000000 0x00000000 0x80000000 ] "
    "[ ct set label with reg 1 ] [ counter pkts 0 bytes 0 ] [ immediate reg 0 drop ]";
constexpr char kInboundTcpReturn1001[] =
    "agent_1001: [ ct load direction => reg 1 ] [ cmp eq reg 1 0x00000001 ] "
    "[ fib daddr type => reg 1 ] [ cmp neq reg 1 0x00000002 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";
constexpr char kUnproxiedDrop1001[] =
    "agent_1001: [ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ fib daddr type => reg 1 ] [ cmp neq reg 1 0x00000002 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 drop ]";
constexpr char kUdpReturn1001[] =
    "agent_1001: [ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";
// The refusals of DNS to loopback every filter chain ends its returns with: IPv4 then IPv6, UDP
// (port unreachable) then TCP (reset), as nft compiles `meta nfproto ipv4 ip daddr 127.0.0.0/8
// udp dport 53 counter reject with icmpx type port-unreachable` and its siblings.
constexpr char kLoopbackDnsUdpRefused1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 1b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0000007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ reject type 2 code 1 ]";
constexpr char kLoopbackDnsTcpRefused1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 1b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0000007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ reject type 1 code 0 ]";
constexpr char kLoopback6DnsUdpRefused1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
    "[ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ reject type 2 code 1 ]";
constexpr char kLoopback6DnsTcpRefused1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
    "[ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ reject type 1 code 0 ]";
// Filter-chain commands for agent_1001: its chain, `rules` (each a rule's text), its element.
std::vector<std::string> FilterChain1001(const std::vector<std::string>& rules) {
  std::vector<std::string> out = {"newchain 1 agent_1001"};
  for (const std::string& rule : rules) out.push_back("newrule 1 " + rule);
  out.push_back("newsetelem 1 agents: 1001 : jump agent_1001 end 1002");
  return out;
}
constexpr char kNotTcpDrop1001[] =
    "agent_1001: [ meta load l4proto => reg 1 ] [ cmp neq reg 1 0x00000006 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 drop ]";

TEST(NftRuleset, SkeletonIsTableMapDispatcherAndOneVmapRule) {
  NftBatch batch(100);
  AddSkeleton(batch, Ip(), 7);
  const std::vector<Message> messages = Decode(batch.Finish());
  EXPECT_THAT(Commands(messages),
              ElementsAre("newtable 2 leash", "newset 2 agents", "newchain 2 output",
                          absl::StrCat("newrule 2 ", kDispatch)));
  // The map: uid keys (nft's TYPE_UID, 4 bytes), verdict data, referenced by id in-batch.
  nftnl_set* set = nftnl_set_alloc();
  ASSERT_GE(nftnl_set_nlmsg_parse(messages[2].header, set), 0);
  EXPECT_EQ(nftnl_set_get_u32(set, NFTNL_SET_FLAGS),
            static_cast<uint32_t>(NFT_SET_MAP | NFT_SET_INTERVAL));
  EXPECT_EQ(nftnl_set_get_u32(set, NFTNL_SET_KEY_TYPE), kNftTypeUid);
  EXPECT_EQ(nftnl_set_get_u32(set, NFTNL_SET_KEY_LEN), 4u);
  EXPECT_EQ(nftnl_set_get_u32(set, NFTNL_SET_DATA_TYPE), static_cast<uint32_t>(NFT_DATA_VERDICT));
  EXPECT_EQ(nftnl_set_get_u32(set, NFTNL_SET_ID), 7u);
  nftnl_set_free(set);
  // The dispatcher: nat, output hook, dstnat priority, accept.
  nftnl_chain* chain = nftnl_chain_alloc();
  ASSERT_GE(nftnl_chain_nlmsg_parse(messages[3].header, chain), 0);
  EXPECT_STREQ(nftnl_chain_get_str(chain, NFTNL_CHAIN_TYPE), "nat");
  EXPECT_EQ(nftnl_chain_get_u32(chain, NFTNL_CHAIN_HOOKNUM), static_cast<uint32_t>(NF_INET_LOCAL_OUT));
  EXPECT_EQ(nftnl_chain_get_s32(chain, NFTNL_CHAIN_PRIO), -100);
  EXPECT_EQ(nftnl_chain_get_u32(chain, NFTNL_CHAIN_POLICY), static_cast<uint32_t>(NF_ACCEPT));
  nftnl_chain_free(chain);
  // Creating never empties: no NLM_F_EXCL on the shared table, map or dispatcher chain.
  for (int i : {1, 2, 3}) EXPECT_EQ(messages[i].flags & NLM_F_EXCL, 0) << messages[i].text;
}

// The guard drops the answers of a connection a UID's inbound rule labelled, whoever owns the
// packet: `ct direction reply ct label 127 fib daddr type != local counter drop`.
// Its second chain marks TCP from off the host for policy routing (controlplane/route_rules.h).
TEST(NftRuleset, GuardDropsAnswersOfLabelledConnectionsAndMarksTcpFromOffTheHost) {
  NftBatch batch(1);
  AddGuard(batch);
  const std::vector<Message> messages = Decode(batch.Finish());
  EXPECT_THAT(
      Commands(messages),
      ElementsAre("newtable 1 leash_guard", "newchain 1 output",
                  "newrule 1 output: [ ct load direction => reg 1 ] [ cmp eq reg 1 0x00000001 ] "
                  "[ ct load label => reg 1 ] [ bitwise reg 1 = ( reg 1 & 0x00000000 0x00000000 "
                  "0x00000000 0x80000000 ) ^ 0x00000000 0x00000000 0x00000000 0x00000000 ] "
                  "[ cmp neq reg 1 0x00000000 0x00000000 0x00000000 0x00000000 ] "
                  "[ fib daddr type => reg 1 ] [ cmp neq reg 1 0x00000002 ] "
                  "[ counter pkts 0 bytes 0 ] [ immediate reg 0 drop ]",
                  "newchain 1 prerouting",
                  "newrule 1 prerouting: [ meta load l4proto => reg 1 ] [ cmp eq reg 1 "
                  "0x00000006 ] [ meta load iif => reg 1 ] [ cmp neq reg 1 0x00000001 ] "
                  "[ meta load mark => reg 1 ] [ bitwise reg 1 = ( reg 1 & 0xfeffffff ) ^ "
                  "0x01000000 ] [ meta set mark with reg 1 ]"));
  nftnl_chain* chain = nftnl_chain_alloc();
  ASSERT_GE(nftnl_chain_nlmsg_parse(messages[2].header, chain), 0);
  EXPECT_STREQ(nftnl_chain_get_str(chain, NFTNL_CHAIN_TYPE), "filter");
  EXPECT_EQ(nftnl_chain_get_u32(chain, NFTNL_CHAIN_HOOKNUM), static_cast<uint32_t>(NF_INET_LOCAL_OUT));
  EXPECT_EQ(nftnl_chain_get_s32(chain, NFTNL_CHAIN_PRIO), 0);
  nftnl_chain_free(chain);
}

TEST(NftRuleset, FilterSkeletonIsFilterTypeAtPriorityZero) {
  NftBatch batch(1);
  AddSkeleton(batch, Inet(), 3);
  const std::vector<Message> messages = Decode(batch.Finish());
  // After the skuid dispatch, the refusal device's packets by their route (route_rules.h):
  // the IPv4 realm, made big-endian like the map's keys, and the last 32 bits of the IPv6
  // next hop (reg 11 is the fourth word of reg 1), behind the /96 prefix.
  constexpr char kDevice[] =
      "[ meta load oifname => reg 1 ] [ cmp eq reg 1 0x7361656c 0x6e692d68 0x6e756f62 "
      "0x00000064 ] ";
  EXPECT_THAT(
      Commands(messages),
      ElementsAre("newtable 1 leash_filter", "newset 1 agents", "newchain 1 output",
                  absl::StrCat("newrule 1 ", kDispatch),
                  absl::StrCat("newrule 1 output: ", kDevice,
                               "[ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
                               "[ meta load rtclassid => reg 1 ] "
                               "[ byteorder reg 1 = hton(reg 1, 4, 4) ] "
                               "[ lookup reg 1 set agents dreg 0 ]"),
                  absl::StrCat("newrule 1 output: ", kDevice,
                               "[ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
                               "[ rt load nexthop6 => reg 1 ] "
                               "[ cmp eq reg 1 0x61656cfd 0x00006873 0x00000000 ] "
                               "[ lookup reg 11 set agents dreg 0 ]")));
  nftnl_chain* chain = nftnl_chain_alloc();
  ASSERT_GE(nftnl_chain_nlmsg_parse(messages[3].header, chain), 0);
  EXPECT_STREQ(nftnl_chain_get_str(chain, NFTNL_CHAIN_TYPE), "filter");
  EXPECT_EQ(nftnl_chain_get_s32(chain, NFTNL_CHAIN_PRIO), 0);
  nftnl_chain_free(chain);
}

TEST(NftRuleset, SubjectInNatTableIsLoopbackExemptionExceptProxyRangeThenRedirect) {
  for (const LeashTable* table : {&Ip(), &Ip6()}) {
    NftBatch batch(1);
    ApplySubjects(batch, *table, {MakeSubject(1001, 18001)}, {}, {});
    const std::vector<Message> messages = Decode(batch.Finish());
    const std::string f = absl::StrCat(table->family);
    EXPECT_THAT(Commands(messages),
                ElementsAre("newchain " + f + " agent_1001",
                            "newrule " + f + " " +
                                (table == &Ip() ? kLoopbackExempt1001 : kLoopback6Exempt1001),
                            "newrule " + f + " " + kRedirect1001To18001,
                        "newsetelem " + f + " agents: 1001 : jump agent_1001 end 1002"))
        << table->Label();
    // A UID's chain and element are created fresh, never merged into something stale.
    EXPECT_NE(messages[1].flags & NLM_F_EXCL, 0);
    EXPECT_NE(messages[4].flags & NLM_F_EXCL, 0);
  }
}

// Filter chains: the squatter rule first, then what may leave besides TCP, then the drop of
// everything else that is not TCP (UDP, ICMP ping sockets, UDP-Lite, SCTP).
TEST(NftRuleset, SubjectInFilterTableDropsAllButTcpAndDnsToResolvers) {
  NftBatch batch(1);
  // A duplicate and an IPv4-mapped spelling of the same resolver collapse into one rule.
  ApplySubjects(batch, Inet(),
                {MakeSubject(1001, 18001, false,
                             {Addr("10.0.0.53"), Addr("2001:db8::53"), Addr("10.0.0.53"),
                              Addr("::ffff:10.0.0.53")})},
                {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAreArray(FilterChain1001(
                  {kSquatDrop1001, kInboundDrop1001, kUnproxiedDrop1001, kLoopbackDnsUdpRefused1001,
                   kLoopbackDnsTcpRefused1001, kLoopback6DnsUdpRefused1001,
                   kLoopback6DnsTcpRefused1001, kDns10_0_0_53, kDns2001_db8__53,
                   kNotTcpDrop1001})));
}

TEST(NftRuleset, SubjectWithoutResolversDropsAllUdp) {
  NftBatch batch(1);
  ApplySubjects(batch, Inet(), {MakeSubject(1001, 18001)}, {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAreArray(FilterChain1001(
                  {kSquatDrop1001, kInboundDrop1001, kUnproxiedDrop1001, kLoopbackDnsUdpRefused1001,
                   kLoopbackDnsTcpRefused1001, kLoopback6DnsUdpRefused1001,
                   kLoopback6DnsTcpRefused1001, kNotTcpDrop1001})));
}

TEST(NftRuleset, UdpAllowedSubjectReturnsUdpAndStillDropsTheRest) {
  NftBatch batch(1);
  ApplySubjects(batch, Inet(), {MakeSubject(1001, 18001, true, {Addr("10.0.0.53")})}, {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAreArray(FilterChain1001(
                  {kSquatDrop1001, kInboundDrop1001, kUnproxiedDrop1001, kLoopbackDnsUdpRefused1001,
                   kLoopbackDnsTcpRefused1001, kLoopback6DnsUdpRefused1001,
                   kLoopback6DnsTcpRefused1001, kUdpReturn1001, kNotTcpDrop1001})));
}

// network.inbound: allow — the answers of this UID's TCP listeners return (counted); every other
// protocol's answers go on to the UDP rules and the drop; TCP that escaped the redirect is still
// dropped.
TEST(NftRuleset, InboundAllowedSubjectReturnsReplyTcpAndStillDropsUnproxiedTcp) {
  NetfilterSubject subject = MakeSubject(1001, 18001);
  subject.inbound_allowed = true;
  NftBatch batch(1);
  ApplySubjects(batch, Inet(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAreArray(FilterChain1001(
                  {kSquatDrop1001, kInboundTcpReturn1001, kUnproxiedDrop1001,
                   kLoopbackDnsUdpRefused1001, kLoopbackDnsTcpRefused1001,
                   kLoopback6DnsUdpRefused1001, kLoopback6DnsTcpRefused1001, kNotTcpDrop1001})));
}

// The nat tables are untouched by the inbound setting: an answer never meets a nat chain.
TEST(NftRuleset, InboundSettingDoesNotChangeTheNatChains) {
  NetfilterSubject allowed = MakeSubject(1001, 18001);
  allowed.inbound_allowed = true;
  for (const LeashTable* table : {&Ip(), &Ip6()}) {
    NftBatch a(1);
    ApplySubjects(a, *table, {allowed}, {}, {});
    NftBatch b(1);
    ApplySubjects(b, *table, {MakeSubject(1001, 18001)}, {}, {});
    EXPECT_EQ(Commands(Decode(a.Finish())), Commands(Decode(b.Finish()))) << table->Label();
  }
}

// The counters status reports are found by the rules' comments, whatever their position.
TEST(NftRuleset, CountedRulesCarryTheCommentsTallyCountersReads) {
  for (const bool inbound_allowed : {false, true}) {
    NetfilterSubject subject = MakeSubject(1001, 18001);
    subject.inbound_allowed = inbound_allowed;
    NftBatch batch(1);
    ApplySubjects(batch, Inet(), {subject}, {}, {});
    NetfilterCounters counters;
    int tagged = 0;
    for (const Message& m : Decode(batch.Finish())) {
      if (m.type != NFT_MSG_NEWRULE) continue;
      nftnl_rule* rule = nftnl_rule_alloc();
      ASSERT_GE(nftnl_rule_nlmsg_parse(m.header, rule), 0);
      // Stand in for the kernel's count: every counter of the rule has seen 7 packets.
      nftnl_expr_iter* it = nftnl_expr_iter_create(rule);
      for (nftnl_expr* e = nftnl_expr_iter_next(it); e != nullptr; e = nftnl_expr_iter_next(it)) {
        if (std::strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "counter") == 0) {
          nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_PACKETS, 7);
        }
      }
      nftnl_expr_iter_destroy(it);
      if (nftnl_rule_is_set(rule, NFTNL_RULE_USERDATA)) ++tagged;
      TallyCounters(rule, counters);
      nftnl_rule_free(rule);
    }
    EXPECT_EQ(tagged, 6) << inbound_allowed;
    EXPECT_EQ(counters.inbound_dropped_packets, inbound_allowed ? 0u : 7u);
    EXPECT_EQ(counters.inbound_allowed_packets, inbound_allowed ? 7u : 0u);
    EXPECT_EQ(counters.unproxied_dropped_packets, 7u);
    EXPECT_EQ(counters.loopback_dns_refused_packets, 4u * 7);
  }
}

constexpr char kFilterLoopbackExempt1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 1b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0000007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] "
    "[ range neq reg 1 0x00005046 0x0000374a ] [ counter pkts 0 bytes 0 ] "
    "[ immediate reg 0 return ]";
constexpr char kFilterLoopback6Exempt1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
    "[ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] "
    "[ range neq reg 1 0x00005046 0x0000374a ] [ counter pkts 0 bytes 0 ] "
    "[ immediate reg 0 return ]";
constexpr char kTcpReset1001[] =
    "agent_1001: [ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ counter pkts 0 bytes 0 ] [ reject type 1 code 0 ]";

// A subject whose listener is not bound: loopback services exempt, the rest of its TCP reset.
TEST(NftRuleset, RefusedTcpIsResetAfterTheLoopbackExemption) {
  NetfilterSubject subject = MakeSubject(1001, 18001, true);
  subject.refuse_tcp = true;
  NftBatch batch(1);
  ApplySubjects(batch, Inet(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAreArray(FilterChain1001(
                  {kSquatDrop1001, kInboundDrop1001, kUnproxiedDrop1001, kLoopbackDnsUdpRefused1001,
                   kLoopbackDnsTcpRefused1001, kLoopback6DnsUdpRefused1001,
                   kLoopback6DnsTcpRefused1001, kUdpReturn1001, kFilterLoopbackExempt1001,
                   kFilterLoopback6Exempt1001, kTcpReset1001, kNotTcpDrop1001})));
}

constexpr char kRedirectDns10_0_0_53Udp[] =
    "agent_1001: [ payload load 4b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x3500000a ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";
constexpr char kRedirectDns10_0_0_53Tcp[] =
    "agent_1001: [ payload load 4b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x3500000a ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";
// `ip daddr 127.0.0.0/8 udp dport 53 counter redirect to :18001` and its siblings, as nft
// compiles them.
constexpr char kRedirectLoopbackDnsUdp[] =
    "agent_1001: [ payload load 1b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0000007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";
constexpr char kRedirectLoopbackDnsTcp[] =
    "agent_1001: [ payload load 1b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0000007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";
constexpr char kRedirectLoopback6DnsUdp[] =
    "agent_1001: [ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";
constexpr char kRedirectLoopback6DnsTcp[] =
    "agent_1001: [ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 1 0x00005146 ] "
    "[ redir proto_min reg 1 flags 0x2 ]";

// Rule N15: under network.dns: filter, DNS to every loopback address of the table's family goes
// to the filter, before the loopback exemption; a loopback resolver needs no rule of its own.
TEST(NftRuleset, LoopbackDnsIsRedirectedToTheFilterBeforeTheLoopbackExemption) {
  NetfilterSubject subject =
      MakeSubject(1001, 18001, false, {Addr("10.0.0.53"), Addr("127.0.0.53"), Addr("::1")});
  subject.dns_filter = true;
  NftBatch ip(1);
  ApplySubjects(ip, Ip(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(ip.Finish())),
              ElementsAre("newchain 2 agent_1001",
                          absl::StrCat("newrule 2 ", kRedirectDns10_0_0_53Udp),
                          absl::StrCat("newrule 2 ", kRedirectDns10_0_0_53Tcp),
                          absl::StrCat("newrule 2 ", kRedirectLoopbackDnsUdp),
                          absl::StrCat("newrule 2 ", kRedirectLoopbackDnsTcp),
                          absl::StrCat("newrule 2 ", kLoopbackExempt1001),
                          absl::StrCat("newrule 2 ", kRedirect1001To18001),
                          "newsetelem 2 agents: 1001 : jump agent_1001 end 1002"));
  // No IPv6 resolver but ::1: the loopback rules are all there is.
  NftBatch ip6(1);
  ApplySubjects(ip6, Ip6(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(ip6.Finish())),
              ElementsAre("newchain 10 agent_1001",
                          absl::StrCat("newrule 10 ", kRedirectLoopback6DnsUdp),
                          absl::StrCat("newrule 10 ", kRedirectLoopback6DnsTcp),
                          absl::StrCat("newrule 10 ", kLoopback6Exempt1001),
                          absl::StrCat("newrule 10 ", kRedirect1001To18001),
                          "newsetelem 10 agents: 1001 : jump agent_1001 end 1002"));
  // network.dns: resolvers redirects no DNS: loopback DNS is the filter chain's to refuse.
  subject.dns_filter = false;
  NftBatch unfiltered(1);
  ApplySubjects(unfiltered, Ip(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(unfiltered.Finish())),
              ElementsAre("newchain 2 agent_1001", absl::StrCat("newrule 2 ", kLoopbackExempt1001),
                          absl::StrCat("newrule 2 ", kRedirect1001To18001),
                          "newsetelem 2 agents: 1001 : jump agent_1001 end 1002"));
}

constexpr char kOwnDnsV4Return1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 4b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x0100007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00005146 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";
constexpr char kOwnDnsV6Return1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
    "[ payload load 16b @ network header + 24 => reg 1 ] "
    "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00005146 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";

// Under network.dns: filter the subject's own DNS socket is reachable even with no resolvers:
// the nat chain redirects loopback DNS there all the same, and the filter answers it.
TEST(NftRuleset, AFilteredSubjectWithoutResolversStillReachesItsFilter) {
  NetfilterSubject subject = MakeSubject(1001, 18001);
  subject.dns_filter = true;
  NftBatch batch(1);
  ApplySubjects(batch, Inet(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAreArray(FilterChain1001(
                  {kSquatDrop1001, kInboundDrop1001, kUnproxiedDrop1001,
                   kLoopbackDnsUdpRefused1001, kLoopbackDnsTcpRefused1001,
                   kLoopback6DnsUdpRefused1001, kLoopback6DnsTcpRefused1001,
                   kOwnDnsV4Return1001, kOwnDnsV6Return1001, kNotTcpDrop1001})));
}

constexpr char kOwnLoopbackResolverUdp1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 4b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x3500007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";
constexpr char kOwnLoopbackResolverTcp1001[] =
    "agent_1001: [ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
    "[ payload load 4b @ network header + 16 => reg 1 ] [ cmp eq reg 1 0x3500007f ] "
    "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
    "[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
    "[ counter pkts 0 bytes 0 ] [ immediate reg 0 return ]";

// Rule N15 without a filter (network.dns: resolvers): the subject's own loopback resolver is
// reached over UDP and TCP, returned before the refusal of every other loopback address's DNS;
// under network.udp: allow too, whose UDP return comes only after the refusal.
TEST(NftRuleset, WithoutAFilterLoopbackDnsReachesOnlyTheSubjectsOwnLoopbackResolver) {
  for (const bool udp_allowed : {false, true}) {
    NftBatch batch(1);
    ApplySubjects(batch, Inet(),
                  {MakeSubject(1001, 18001, udp_allowed, {Addr("127.0.0.53"), Addr("10.0.0.53")})},
                  {}, {});
    std::vector<std::string> rules = {
        kSquatDrop1001, kInboundDrop1001, kUnproxiedDrop1001, kOwnLoopbackResolverUdp1001,
        kOwnLoopbackResolverTcp1001, kLoopbackDnsUdpRefused1001, kLoopbackDnsTcpRefused1001,
        kLoopback6DnsUdpRefused1001, kLoopback6DnsTcpRefused1001};
    rules.push_back(udp_allowed ? kUdpReturn1001 : kDns10_0_0_53);
    rules.push_back(kNotTcpDrop1001);
    EXPECT_THAT(Commands(Decode(batch.Finish())), ElementsAreArray(FilterChain1001(rules)))
        << udp_allowed;
  }
}

// A subject that has no proxy port: its nat chains redirect nothing (not even its DNS, even
// under network.dns: filter), and its filter chain resets every TCP connection but loopback
// services and drops every other protocol, DNS to its resolvers included. DNS to a loopback
// address is refused before the loopback exemption, as for every subject without a filter to
// reach (rule N15): a portless subject reaches no resolver on this host either.
TEST(NftRuleset, APortlessSubjectsChainRefusesEverything) {
  NetfilterSubject subject =
      MakeSubject(1001, 0, false, {Addr("10.0.0.53"), Addr("2001:db8::53")});
  subject.dns_filter = true;
  subject.refuse_tcp = true;
  ASSERT_TRUE(ValidateNetfilterSubject(subject).ok());
  for (const LeashTable* table : {&Ip(), &Ip6()}) {
    NftBatch batch(1);
    ApplySubjects(batch, *table, {subject}, {}, {});
    const std::vector<Message> messages = Decode(batch.Finish());
    const std::string f = absl::StrCat(table->family);
    EXPECT_THAT(Commands(messages),
                ElementsAre("newchain " + f + " agent_1001",
                            "newrule " + f + " " +
                                (table == &Ip() ? kLoopbackExempt1001 : kLoopback6Exempt1001),
                            "newsetelem " + f + " agents: 1001 : jump agent_1001 end 1002"))
        << table->Label();
  }
  NftBatch batch(1);
  ApplySubjects(batch, Inet(), {subject}, {}, {});
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAre("newchain 1 agent_1001", absl::StrCat("newrule 1 ", kSquatDrop1001),
                          absl::StrCat("newrule 1 ", kInboundDrop1001),
                          absl::StrCat("newrule 1 ", kUnproxiedDrop1001),
                          absl::StrCat("newrule 1 ", kLoopbackDnsUdpRefused1001),
                          absl::StrCat("newrule 1 ", kLoopbackDnsTcpRefused1001),
                          absl::StrCat("newrule 1 ", kLoopback6DnsUdpRefused1001),
                          absl::StrCat("newrule 1 ", kLoopback6DnsTcpRefused1001),
                          absl::StrCat("newrule 1 ", kFilterLoopbackExempt1001),
                          absl::StrCat("newrule 1 ", kFilterLoopback6Exempt1001),
                          absl::StrCat("newrule 1 ", kTcpReset1001),
                          absl::StrCat("newrule 1 ", kNotTcpDrop1001),
                          "newsetelem 1 agents: 1001 : jump agent_1001 end 1002"));
  // Port 0 without refusing TCP would redirect to nothing: refused before the kernel.
  subject.refuse_tcp = false;
  EXPECT_THAT(ValidateNetfilterSubject(subject).message(), HasSubstr("has no proxy port"));
}

TEST(NftRuleset, ReleaseDeletesElementsBeforeChains) {
  NftBatch batch(1);
  ReleaseSubjects(batch, Ip6(), {{1001, {{1001, 1001}, {100000, 165535}}}, {1002, {{1002, 1002}}}},
                  {1001, 1002});
  ReleaseSubjects(batch, Ip(), {}, {1003});
  ReleaseSubjects(batch, Inet(), {{1004, {{1004, 1004}}}}, {});
  ReleaseSubjects(batch, Inet(), {}, {});
  // Each interval is its start and its end element (flagged), as nft deletes a range.
  EXPECT_THAT(Commands(Decode(batch.Finish())),
              ElementsAre("delsetelem 10 agents: 1001 end 1002 100000 end 165536 1002 end 1003",
                          "delchain 10 agent_1001", "delchain 10 agent_1002",
                          "delchain 2 agent_1003", "delsetelem 1 agents: 1004 end 1005"));
}

TEST(NftRuleset, ApplyOverPresentObjectsDeletesExactlyThoseFirst) {
  NftBatch batch(1);
  // 1001 fully present, 1002 only a chain (half-present), 1003 new.
  ApplySubjects(batch, Ip(),
                {MakeSubject(1001, 18001), MakeSubject(1002, 18002), MakeSubject(1003, 18003)},
                /*elements_present=*/{{1001, {{1001, 1001}}}, {4242, {{4242, 4242}}}},
                /*chains_present=*/{1001, 1002, 4242});
  const std::vector<std::string> commands = Commands(Decode(batch.Finish()));
  ASSERT_EQ(commands.size(), 3u + 9 + 1);
  EXPECT_THAT(std::vector<std::string>(commands.begin(), commands.begin() + 3),
              ElementsAre("delsetelem 2 agents: 1001 end 1002", "delchain 2 agent_1001",
                          "delchain 2 agent_1002"));
  EXPECT_EQ(commands[3], "newchain 2 agent_1001");
  EXPECT_EQ(commands[6], "newchain 2 agent_1002");
  EXPECT_EQ(commands[9], "newchain 2 agent_1003");
  EXPECT_EQ(commands.back(),
            "newsetelem 2 agents: 1001 : jump agent_1001 end 1002 1002 : jump agent_1002 end 1003 "
            "1003 : jump agent_1003 end 1004");
  // 4242 is present but was not asked for: untouched.
  for (const std::string& c : commands) EXPECT_THAT(c, ::testing::Not(HasSubstr("4242")));
}

TEST(NftRuleset, AStaleIntervalOfAnotherChainOverlappingANewClaimIsDeletedInTheSameBatch) {
  NftBatch batch(1);
  NetfilterSubject fresh = MakeSubject(1003, 18003);
  fresh.subordinate_uids = {{100000, 165535}};
  // 1001 left before a crash with no teardown; the account database has since given its range
  // to 1003. 1002's range does not overlap and is not touched.
  ApplySubjects(batch, Ip(), {fresh},
                /*elements_present=*/{{1001, {{1001, 1001}, {100000, 165535}}},
                                      {1002, {{1002, 1002}, {165536, 231071}}}},
                /*chains_present=*/{1001, 1002});
  const std::vector<std::string> commands = Commands(Decode(batch.Finish()));
  ASSERT_FALSE(commands.empty());
  EXPECT_EQ(commands.front(), "delsetelem 2 agents: 100000 end 165536");
  EXPECT_EQ(commands.back(),
            "newsetelem 2 agents: 1003 : jump agent_1003 end 1004 100000 : jump agent_1003 end "
            "165536");
  for (const std::string& c : commands) {
    EXPECT_THAT(c, ::testing::Not(HasSubstr("agent_1001"))) << "1001's chain is left alone";
    EXPECT_THAT(c, ::testing::Not(HasSubstr("231072"))) << "1002's range is left alone";
  }
}

TEST(NftBatchFraming, BeginCommandsEndWithOnlyTheLastCommandAcknowledged) {
  NftBatch batch(500);
  EXPECT_TRUE(batch.empty());
  ApplySubjects(batch, Ip(), {MakeSubject(1001, 18001)}, {}, {});
  const std::vector<Message> messages = Decode(batch.Finish());
  ASSERT_EQ(messages.size(), 6u);
  EXPECT_EQ(messages.front().type, NFNL_MSG_BATCH_BEGIN);
  EXPECT_EQ(messages.back().type, NFNL_MSG_BATCH_END);
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i].seq, 500 + i);
    EXPECT_EQ((messages[i].flags & NLM_F_ACK) != 0, i == messages.size() - 2) << i;
  }
  EXPECT_EQ(batch.command_count(), 4);
  EXPECT_EQ(batch.last_command_seq(), 504u);
  EXPECT_EQ(batch.Describe(501), "add chain agent_1001 to table ip leash");
  EXPECT_EQ(batch.Describe(504), "add element 1001 : jump agent_<uid> to map ip leash agents");
  EXPECT_EQ(batch.Describe(500), "");  // BATCH_BEGIN
  EXPECT_EQ(batch.Describe(505), "");  // BATCH_END
}

TEST(NftBatchFraming, ThousandSubjectsFitOneBatchWithElementsGrouped) {
  NftBatch batch(1);
  std::vector<NetfilterSubject> subjects;
  for (uint32_t uid = 10000; uid < 11000; ++uid) {
    subjects.push_back(MakeSubject(uid, 18001, false, {Addr("10.0.0.53")}));
  }
  for (const LeashTable& table : LeashTables()) ApplySubjects(batch, table, subjects, {}, {});
  const std::vector<Message> messages = Decode(batch.Finish());
  // Per UID: in each nat table a chain and two rules, in the filter table a chain and nine
  // (squatter, inbound, unproxied TCP, four loopback DNS refusals, DNS, not-TCP); intervals 128
  // to a message (8 per table).
  EXPECT_EQ(batch.command_count(), 1000 * 16 + 3 * 8);
  EXPECT_EQ(messages.size(), 1000u * 16 + 3 * 8 + 2);
  EXPECT_EQ(messages.back().type, NFNL_MSG_BATCH_END);
  size_t elements = 0;
  for (const Message& m : messages) {
    if (m.type == NFT_MSG_NEWSETELEM) {
      elements += static_cast<size_t>(std::count(m.text.begin(), m.text.end(), ':')) - 1;
    }
  }
  EXPECT_EQ(elements, 3000u);
}

TEST(NftRuleset, SubordinateRangesJumpToTheSubjectsOwnChainMerged) {
  NftBatch batch(1);
  NetfilterSubject subject = MakeSubject(1001, 18001);
  // 1002 is adjacent to the UID: one interval 1001-1002. The range running to the last UID has
  // no end element (nothing is past it).
  subject.subordinate_uids = {{1002, 1002}, {100000, 165535}, {4294900000u, 4294967295u}};
  ApplySubjects(batch, Ip(), {subject}, {}, {});
  const std::vector<std::string> commands = Commands(Decode(batch.Finish()));
  EXPECT_EQ(commands.back(),
            "newsetelem 2 agents: 1001 : jump agent_1001 end 1003 100000 : jump agent_1001 "
            "end 165536 4294900000 : jump agent_1001");
}

TEST(NftRuleset, DumpedElementsPairIntoEachSubjectsIntervals) {
  // As the kernel dumps them (any order): starts with their chain, ends flagged; adjacent
  // intervals share a key; an element jumping elsewhere is not Leash's.
  const PresentIntervals present = PairDumpedElements({
      {165536, true, ""},
      {1002, false, "agent_1002"},
      {1002, true, ""},
      {1001, false, "agent_1001"},
      {1003, true, ""},
      {100000, false, "agent_1001"},
      {4294900000u, false, "agent_1002"},
      {0, true, ""},  // `nft` adds a zero end element to a map it fills itself
      {5000, false, "somebody_else"},
      {5001, true, ""},
  });
  EXPECT_THAT(present.at(1001),
              ElementsAre(engine::UidRange{1001, 1001}, engine::UidRange{100000, 165535}));
  EXPECT_THAT(present.at(1002),
              ElementsAre(engine::UidRange{1002, 1002}, engine::UidRange{4294900000u, 4294967295u}));
  EXPECT_EQ(present.size(), 2u);
}

TEST(AgentChainName, RoundTripsOnlyCanonicalNames) {
  EXPECT_EQ(AgentChainName(1001), "agent_1001");
  EXPECT_THAT(ParseAgentChainName("agent_1001"), Optional(1001u));
  EXPECT_THAT(ParseAgentChainName("agent_4294967295"), Optional(4294967295u));
  for (const char* other : {"agent_", "agent_01001", "agent_+1", "agent_1x", "agent_4294967296",
                            "output", "agent-1001", "Agent_1001"}) {
    EXPECT_EQ(ParseAgentChainName(other), std::nullopt) << other;
  }
}

// --- The old shape -------------------------------------------------------------------------

ExprSnapshot Named(const std::string& name) {
  ExprSnapshot e;
  e.name = name;
  return e;
}
ExprSnapshot Meta(uint32_t key) {
  ExprSnapshot e = Named("meta");
  e.meta_key = key;
  e.dreg = NFT_REG_1;
  return e;
}
ExprSnapshot Lookup(const std::string& set) {
  ExprSnapshot e = Named("lookup");
  e.sreg = NFT_REG_1;
  e.dreg = NFT_REG_VERDICT;
  e.set = set;
  return e;
}

MapSnapshot Map(uint32_t flags, uint32_t data_type) {
  MapSnapshot m;
  m.name = "agents";
  m.flags = flags;
  m.key_len = 4;
  m.data_type = data_type;
  return m;
}
ExprSnapshot ToBigEndian() {
  ExprSnapshot e = Named("byteorder");
  e.sreg = NFT_REG_1;
  e.dreg = NFT_REG_1;
  e.byteorder_op = NFT_BYTEORDER_HTON;
  return e;
}
MapSnapshot AgentsMap() { return Map(NFT_SET_MAP | NFT_SET_INTERVAL, NFT_DATA_VERDICT); }
BaseChainSnapshot Dispatcher(const char* type) {
  return {"output", type, NF_INET_LOCAL_OUT,
          {{Meta(NFT_META_SKUID), ToBigEndian(), Lookup("agents")}}};
}
// The filter table's: the skuid dispatch and the refusal device's two.
BaseChainSnapshot FilterDispatcher() {
  BaseChainSnapshot chain = Dispatcher("filter");
  chain.rules.push_back({Meta(NFT_META_OIFNAME), Named("cmp"), Meta(NFT_META_NFPROTO),
                         Named("cmp"), Meta(NFT_META_RTCLASSID), ToBigEndian(), Lookup("agents")});
  ExprSnapshot by_hop = Lookup("agents");
  by_hop.sreg = NFT_REG32_03;
  chain.rules.push_back({Meta(NFT_META_OIFNAME), Named("cmp"), Meta(NFT_META_NFPROTO),
                         Named("cmp"), Named("rt"), Named("cmp"), by_hop});
  return chain;
}

struct ShapeCase {
  const char* rule;  // what the case checks
  int table;         // index into LeashTables()
  TableSnapshot snapshot;
  const char* reason_fragment;  // nullptr: current shape
};

TEST(OldShape, EachDepartureFromTheCurrentShapeIsOld) {
  const std::vector<ShapeCase> cases = {
      {"current nat shape", 0, {{AgentsMap()}, {Dispatcher("nat")}}, nullptr},
      {"current ip6 shape", 1, {{AgentsMap()}, {Dispatcher("nat")}}, nullptr},
      {"current filter shape", 2, {{AgentsMap()}, {FilterDispatcher()}}, nullptr},
      {"a filter table from before the refusal device", 2, {{AgentsMap()}, {Dispatcher("filter")}},
       "the dispatch of the refusal device's packets is missing"},
      {"the refusal device's dispatch in a nat table", 0, {{AgentsMap()}, {FilterDispatcher()}},
       "not output (type nat"},
      {"UID rules straight in the hooked chain, no map",
       0,
       {{},
        {{"output", "nat", NF_INET_LOCAL_OUT,
          {{Meta(NFT_META_SKUID), Named("cmp"), Named("immediate"), Named("redir")}}}}},
       "no agents map"},
      {"UID rules in the hooked chain beside the dispatch",
       0,
       {{AgentsMap()},
        {{"output", "nat", NF_INET_LOCAL_OUT,
          {{Meta(NFT_META_SKUID), ToBigEndian(), Lookup("agents")},
           {Meta(NFT_META_SKUID), Named("cmp"), Named("immediate"), Named("redir")}}}}},
       "holds 2 rule(s)"},
      {"linear skuid jump dispatcher",
       0,
       {{AgentsMap()},
        {{"output", "nat", NF_INET_LOCAL_OUT,
          {{Meta(NFT_META_SKUID), Named("cmp"), Named("immediate")}}}}},
       "UID rules directly in the hooked chain"},
      {"dispatcher without its rule", 0,
       {{AgentsMap()}, {{"output", "nat", NF_INET_LOCAL_OUT, {}}}}, "no dispatch rule"},
      {"no hooked chain", 0, {{AgentsMap()}, {}}, "no hooked chain"},
      {"a second hooked chain",
       0,
       {{AgentsMap()}, {Dispatcher("nat"), {"extra", "nat", NF_INET_LOCAL_OUT, {}}}},
       "2 hooked chains"},
      {"filter dispatcher in a nat table", 0, {{AgentsMap()}, {Dispatcher("filter")}},
       "not output (type nat"},
      {"hooked chain under another name",
       0,
       {{AgentsMap()},
        {{"OUTPUT", "nat", NF_INET_LOCAL_OUT, {{Meta(NFT_META_SKUID), Lookup("agents")}}}}},
       "its hooked chain is OUTPUT"},
      {"a map of single UIDs with the host-order dispatch (before subordinate ranges)",
       0,
       {{Map(NFT_SET_MAP, NFT_DATA_VERDICT)},
        {{"output", "nat", NF_INET_LOCAL_OUT, {{Meta(NFT_META_SKUID), Lookup("agents")}}}}},
       "holds single UIDs, not intervals"},
      {"an interval map looked up without the byteorder",
       0,
       {{AgentsMap()},
        {{"output", "nat", NF_INET_LOCAL_OUT, {{Meta(NFT_META_SKUID), Lookup("agents")}}}}},
       "holds 1 rule(s)"},
      {"agents is a plain set",
       2,
       {{Map(0, 0)}, {Dispatcher("filter")}},
       "not a uid : verdict map"},
      {"dispatch looks up another set",
       2,
       {{AgentsMap()},
        {{"output", "filter", NF_INET_LOCAL_OUT, {{Meta(NFT_META_SKUID), Lookup("other")}}}}},
       "holds 1 rule(s)"},
  };
  for (const ShapeCase& c : cases) {
    const std::optional<std::string> reason = OldShapeReason(LeashTables()[c.table], c.snapshot);
    if (c.reason_fragment == nullptr) {
      EXPECT_EQ(reason, std::nullopt) << c.rule;
    } else {
      ASSERT_TRUE(reason.has_value()) << c.rule;
      EXPECT_THAT(*reason, HasSubstr(c.reason_fragment)) << c.rule;
    }
  }
}

TEST(GuardShape, OnlyTheRulesAddGuardMakesAreCurrent) {
  const std::vector<ExprSnapshot> rule = {Named("ct"),  Named("cmp"), Named("ct"),
                                          Named("bitwise"), Named("cmp"), Named("fib"),
                                          Named("cmp"), Named("counter"), Named("immediate")};
  const std::vector<ExprSnapshot> mark = {Named("meta"), Named("cmp"),     Named("meta"),
                                          Named("cmp"),  Named("meta"),    Named("bitwise"),
                                          Named("meta")};
  const BaseChainSnapshot marking{"prerouting", "filter", NF_INET_PRE_ROUTING, {mark}};
  auto with_output = [&](BaseChainSnapshot output) {
    return TableSnapshot{{}, {output, marking}};
  };
  const BaseChainSnapshot current{"output", "filter", NF_INET_LOCAL_OUT, {rule}};
  EXPECT_EQ(GuardShapeReason(with_output(current)), std::nullopt);
  std::vector<ExprSnapshot> shorter(rule.begin(), rule.end() - 1);
  EXPECT_THAT(GuardShapeReason(with_output({"output", "filter", NF_INET_LOCAL_OUT, {shorter}})),
              Optional(HasSubstr("unlike the guard's")));
  EXPECT_THAT(GuardShapeReason(with_output({"output", "filter", NF_INET_LOCAL_OUT, {rule, rule}})),
              Optional(HasSubstr("2 rule(s)")));
  std::vector<ExprSnapshot> other = rule;
  other[5] = Named("meta");
  EXPECT_THAT(GuardShapeReason(with_output({"output", "filter", NF_INET_LOCAL_OUT, {other}})),
              Optional(HasSubstr("at expression 5")));
  EXPECT_THAT(GuardShapeReason({{}, {}}), Optional(HasSubstr("0 hooked chains")));
  // The guard of an earlier Leash, without the marking chain, is replaced.
  EXPECT_THAT(GuardShapeReason({{}, {current}}), Optional(HasSubstr("1 hooked chains")));
  EXPECT_THAT(GuardShapeReason({{}, {current, {"prerouting", "filter", NF_INET_PRE_ROUTING, {}}}}),
              Optional(HasSubstr("0 rule(s)")));
  EXPECT_THAT(GuardShapeReason({{AgentsMap()}, {current, marking}}), Optional(HasSubstr("a set")));
  EXPECT_THAT(GuardShapeReason(with_output({"output", "nat", NF_INET_LOCAL_OUT, {rule}})),
              Optional(HasSubstr("type nat")));
}

}  // namespace
}  // namespace leash::controlplane::nft
