// Traffic through the nft applier's rules, for real: in a fresh namespace with a veth pair
// standing in for remote hosts (192.0.2.11, 2001:db8::11), two test accounts leashed to their
// own proxy-listener stand-ins, and a tagged server behind every address, each account's
// connections are made as that account (setpriv) and the reply says where they landed and what
// SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST reported. Account names do not start with "leash-", so
// a leashd running on the host never discovers them.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controlplane/nft_netfilter.h"
#include "controlplane/subordinate_ids.h"
#include "controlplane/testing/fake_netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/test_account.h"
#include "test/network/nft_inspect.h"
#include "test/network/tagged_server.h"
#include "test/network/traffic_world.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::MakeSubject;
using ::leash::testing::ChainCounters;
using ::leash::testing::MapKeys;
using ::leash::testing::NetNamespace;
using ::leash::testing::TaggedServer;
using ::leash::testing::TestAccount;
using ::leash::testing::TrafficTest;
using ::testing::Each;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr uint16_t kPortA = 18101;
constexpr uint16_t kPortB = 18102;

// Indexes into the server's endpoints, for the kernel-chosen ports.
enum Endpoint { kLocal4 = 6, kLocal6 = 7, kUdpOther = 10 };

class NftTrafficTest : public TrafficTest {
 protected:
  void SetUp() override {
    TrafficTest::SetUp();
    if (!Ready()) return;
    absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    ASSERT_NO_FATAL_FAILURE(StartServer({
        {"a", "127.0.0.1", kPortA},         {"a", "::1", kPortA},
        {"b", "127.0.0.1", kPortB},         {"b", "::1", kPortB},
        {"direct", "192.0.2.11", 443},      {"direct", "2001:db8::11", 443},
        {"local", "127.0.0.1", 0},          {"local", "::1", 0},
        {"dns", "192.0.2.11", 53, true},    {"dns6", "2001:db8::11", 53, true},
        {"udp", "192.0.2.11", 0, true},     {"dns-other", "192.0.2.10", 53, true},
    }));
    absl::StatusOr<std::unique_ptr<NftNetfilter>> nf = NftNetfilter::Create();
    ASSERT_TRUE(nf.ok()) << nf.status();
    nf_ = std::move(*nf);
    ASSERT_TRUE(nf_->Prepare().ok());
    subject_a_ = MakeSubject(a_->uid(), kPortA, false,
                             {*engine::ParseIpAddress("192.0.2.11"),
                              *engine::ParseIpAddress("2001:db8::11")});
    subject_b_ = MakeSubject(b_->uid(), kPortB, /*udp_allowed=*/true);
    absl::Status applied = nf_->ApplyAll({subject_a_, subject_b_});
    ASSERT_TRUE(applied.ok()) << applied;
  }

  std::string Listing(const std::string& family, const std::string& table,
                      const std::string& chain) {
    absl::StatusOr<std::string> out =
        leash::testing::Nft(*ns_, {"-a", "list", "chain", family, table, chain});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }

  // lnft_probe's `serve` on 127.0.0.1:`port` in the namespace, as `account` (root when null),
  // once it says it is listening; it answers every connection with "squatter".
  void Serve(const TestAccount* account, uint16_t port) {
    const std::string log = absl::StrCat(getenv("TEST_TMPDIR"), "/serve-", port);
    std::vector<std::string> argv = {probe_path(), "serve", "127.0.0.1",
                                     absl::StrCat(port)};
    if (account != nullptr) argv = account->AsUser(argv);
    absl::StatusOr<leash::testing::Background> serve =
        leash::testing::Background::Start(ns_->Exec(argv), log);
    ASSERT_TRUE(serve.ok()) << serve.status();
    servers_.push_back(*std::move(serve));
    ASSERT_TRUE(leash::testing::WaitFor(
        [&] {
          std::ifstream in(log);
          std::string line;
          return std::getline(in, line) && line == "listening";
        },
        absl::Seconds(10)));
  }

  std::vector<leash::testing::Background> servers_;
  std::unique_ptr<NftNetfilter> nf_;
  NetfilterSubject subject_a_;
  NetfilterSubject subject_b_;
};

TEST_F(NftTrafficTest, EachAccountsTcpLandsOnItsOwnListenerWithTheOriginalDestination) {
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(Probe(a_, "tcp", "2001:db8::11", 443), "a [2001:db8::11]:443");
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "b 192.0.2.11:443");
  EXPECT_EQ(Probe(b_, "tcp", "2001:db8::11", 443), "b [2001:db8::11]:443");
  // Any TCP port, not just 443: nothing listens on 192.0.2.11:8080, yet the account's
  // connection is answered by its listener.
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 8080), "a 192.0.2.11:8080");
}

TEST_F(NftTrafficTest, AProcessInsideTheAccountsOwnUserNamespaceMeetsTheAccountsChain) {
  auto in_namespace = [&](const std::string& proto, const std::string& address, uint16_t port) {
    absl::StatusOr<leash::testing::RunResult> run = ns_->Run(
        a_->InOwnUserNamespace({probe_path(), proto, address, absl::StrCat(port)}),
        absl::Seconds(20));
    if (!run.ok()) return absl::StrCat("probe failed: ", run.status().ToString());
    return std::string(absl::StripAsciiWhitespace(run->out));
  };
  // Without its subordinate range in the subject, the inner UID's traffic went straight out:
  // the escape this closes (and the proof the probe really ran under another UID).
  ASSERT_EQ(in_namespace("tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
  // leashd reads the account's range from /etc/subuid (useradd gave it one).
  absl::StatusOr<SubordinateIdFile> subuid = ReadSubordinateIds(kSubuidPath);
  ASSERT_TRUE(subuid.ok()) << subuid.status();
  subject_a_.subordinate_uids = subuid->RangesOf(a_->name(), a_->uid());
  ASSERT_FALSE(subject_a_.subordinate_uids.empty()) << "useradd gave " << a_->name() << " no range";
  ASSERT_TRUE(nf_->Apply(subject_a_).ok());
  EXPECT_EQ(in_namespace("tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(in_namespace("tcp", "2001:db8::11", 443), "a [2001:db8::11]:443");
  EXPECT_EQ(in_namespace("udp", "192.0.2.11", server_->port(kUdpOther)), "error EPERM");
  EXPECT_EQ(in_namespace("udp", "192.0.2.11", 53), "dns");
  // The account's own UID and root are as before.
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(Probe(nullptr, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
}

TEST_F(NftTrafficTest, RootsTrafficIsUntouched) {
  EXPECT_EQ(Probe(nullptr, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
  EXPECT_EQ(Probe(nullptr, "tcp", "2001:db8::11", 443), "direct [2001:db8::11]:443");
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kPortB), "b 127.0.0.1:18102");
  EXPECT_EQ(Probe(nullptr, "udp", "192.0.2.11", server_->port(kUdpOther)), "udp");
}

TEST_F(NftTrafficTest, LoopbackToANonProxyPortPassesUntouched) {
  const uint16_t local4 = server_->port(kLocal4);
  const uint16_t local6 = server_->port(kLocal6);
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.1", local4), absl::StrCat("local 127.0.0.1:", local4));
  EXPECT_EQ(Probe(a_, "tcp", "::1", local6), absl::StrCat("local [::1]:", local6));
}

TEST_F(NftTrafficTest, LoopbackToTheProxyRangeLandsOnTheAttemptingUidsOwnListener) {
  // Aimed at the other account's listener: redirected to its own, which sees the attempt.
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.1", kPortB), "a 127.0.0.1:18102");
  EXPECT_EQ(Probe(a_, "tcp", "::1", kPortB), "a [::1]:18102");
  EXPECT_EQ(Probe(b_, "tcp", "127.0.0.1", kPortA), "b 127.0.0.1:18101");
  // The single-agent port, which nothing listens on here, and the range's ends.
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.1", kSingleSubjectPort), "a 127.0.0.1:18443");
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.1", kProxyPortFirst), "a 127.0.0.1:18000");
  EXPECT_EQ(Probe(a_, "tcp", "::1", kProxyPortLast), "a [::1]:18999");
}

// A destination written IPv4-mapped on a dual-stack socket leaves as IPv4 and meets the ip
// table; another loopback address than 127.0.0.1 in the proxy range is not exempt either.
TEST_F(NftTrafficTest, MappedAndOtherLoopbackAddressesAreRedirectedLikeThePlainOnes) {
  EXPECT_EQ(Probe(a_, "tcp", "::ffff:192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(Probe(a_, "tcp", "::ffff:127.0.0.1", kPortB), "a 127.0.0.1:18102");
  EXPECT_EQ(Probe(a_, "tcp", "127.0.0.2", kPortB), "a 127.0.0.2:18102");
}

TEST_F(NftTrafficTest, UdpIsDroppedExceptDnsToTheConfiguredResolvers) {
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.11", 53), "dns");
  EXPECT_EQ(Probe(a_, "udp", "2001:db8::11", 53), "dns6");
  // Another port on the resolver, and port 53 anywhere else (a tunnel), are dropped.
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.11", server_->port(kUdpOther)), "error EPERM");
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.10", 53), "error EPERM");
  EXPECT_EQ(Probe(a_, "udp", "2001:db8::10", 53), "error EPERM");
}

// Not only UDP: every protocol but TCP (sent to the proxy) is dropped for a leashed UID, DNS
// to the resolvers and network.udp: allow excepted. ICMP echo needs no CAP_NET_RAW where
// ping_group_range admits the account's group (Debian's systemd admits every group), and
// UDP-Lite none at all: both used to leave unjudged.
TEST_F(NftTrafficTest, NothingButTcpAndTheAllowedUdpLeaves) {
  ASSERT_TRUE(leash::testing::RunOk(ns_->Exec(
                  {"sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"}))
                  .ok());
  EXPECT_EQ(Probe(nullptr, "icmp", "192.0.2.11", 0), "echo reply");
  EXPECT_EQ(Probe(nullptr, "icmp", "2001:db8::11", 0), "echo reply");
  EXPECT_EQ(Probe(nullptr, "udplite", "192.0.2.11", 9), "sent");
  for (const TestAccount* account : {a_, b_}) {  // b has network.udp: allow
    EXPECT_EQ(Probe(account, "icmp", "192.0.2.11", 0), "error EPERM") << account->name();
    // IPv6 ping sockets do not report the drop to sendto: the echo is simply never answered.
    EXPECT_THAT(Probe(account, "icmp", "2001:db8::11", 0), ::testing::AnyOf("error EPERM", "timeout"))
        << account->name();
    EXPECT_EQ(Probe(account, "udplite", "192.0.2.11", 9), "error EPERM") << account->name();
    EXPECT_EQ(Probe(account, "udplite", "2001:db8::11", 9), "error EPERM") << account->name();
  }
}

// A port of the proxy range that the proxy has not bound (a subject being added, the proxy
// respawning) can be taken by any account. The redirect of the subject it belongs to would then
// hand that subject's connections to the squatter, which could relay them under its own policy.
// A leashed account's socket never completes a handshake from the range.
TEST_F(NftTrafficTest, AnAgentSquattingAProxyPortNeverCompletesAHandshake) {
  constexpr uint16_t kSquatted = 18150;
  constexpr uint16_t kOutsideTheRange = 28150;
  ASSERT_NO_FATAL_FAILURE(Serve(a_, kSquatted));
  ASSERT_NO_FATAL_FAILURE(Serve(a_, kOutsideTheRange));
  // b's redirect now points at the squatted port.
  ASSERT_TRUE(nf_->Apply(MakeSubject(b_->uid(), kSquatted, /*udp_allowed=*/true)).ok());
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "timeout");
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kSquatted), "timeout");
  // The same account's listener outside the range is an ordinary local service.
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kOutsideTheRange), "squatter");
}

// Whoever holds the port (an account whose SYN-ACKs go out as SYN cookies and so escape the
// rule above, or a process that is not leashed), a subject whose listener the proxy could not
// bind has its TCP reset at its own chain: it never reaches that port. Local services stay
// reachable.
TEST_F(NftTrafficTest, ASubjectWhoseListenerIsNotBoundHasItsTcpResetNotRedirected) {
  constexpr uint16_t kTaken = 18160;
  ASSERT_NO_FATAL_FAILURE(Serve(nullptr, kTaken));
  NetfilterSubject b = MakeSubject(b_->uid(), kTaken, /*udp_allowed=*/true);
  ASSERT_TRUE(nf_->Apply(b).ok());
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "squatter");  // what refuse_tcp prevents
  b.refuse_tcp = true;
  ASSERT_TRUE(nf_->Apply(b).ok());
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "error ECONNREFUSED");
  EXPECT_EQ(Probe(b_, "tcp", "2001:db8::11", 443), "error ECONNREFUSED");
  EXPECT_EQ(Probe(b_, "tcp", "127.0.0.1", kTaken), "error ECONNREFUSED");
  const uint16_t local4 = server_->port(kLocal4);
  EXPECT_EQ(Probe(b_, "tcp", "127.0.0.1", local4), absl::StrCat("local 127.0.0.1:", local4));
  // The other account is untouched.
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
}

TEST_F(NftTrafficTest, UdpAllowedPassesAllUdp) {
  EXPECT_EQ(Probe(b_, "udp", "192.0.2.11", server_->port(kUdpOther)), "udp");
  EXPECT_EQ(Probe(b_, "udp", "192.0.2.10", 53), "dns-other");
}

TEST_F(NftTrafficTest, ReleaseStopsRedirectingExactlyThatUid) {
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "direct 192.0.2.11:443");
  EXPECT_EQ(Probe(a_, "tcp", "2001:db8::11", 443), "direct [2001:db8::11]:443");
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.11", server_->port(kUdpOther)), "udp");
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "b 192.0.2.11:443");
  absl::StatusOr<std::vector<uint32_t>> listed = nf_->ListSubjects();
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(*listed, ::testing::ElementsAre(b_->uid()));
}

TEST_F(NftTrafficTest, ApplyingOrReleasingOneUidLeavesTheOtherUidsCountersUnchanged) {
  const std::string chain_b = absl::StrCat("agent_", b_->uid());
  const std::string chain_a = absl::StrCat("agent_", a_->uid());
  // Traffic from both accounts, so both have non-zero counters.
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "b 192.0.2.11:443");
  EXPECT_EQ(Probe(b_, "tcp", "2001:db8::11", 443), "b [2001:db8::11]:443");
  EXPECT_EQ(Probe(b_, "tcp", "127.0.0.1", server_->port(kLocal4)),
            absl::StrCat("local 127.0.0.1:", server_->port(kLocal4)));
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "a 192.0.2.11:443");
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.10", 53), "error EPERM");
  absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> b_counters =
      ChainCounters(*ns_, "ip", "leash", chain_b);
  ASSERT_TRUE(b_counters.ok()) << b_counters.status();
  // Loopback exemption once, redirect once (only a connection's first packet meets nat).
  ASSERT_EQ(b_counters->size(), 2u);
  EXPECT_EQ((*b_counters)[0].first, 1u);
  EXPECT_EQ((*b_counters)[1].first, 1u);
  const std::string b_ip = Listing("ip", "leash", chain_b);
  const std::string b_ip6 = Listing("ip6", "leash", chain_b);
  const std::string b_inet = Listing("inet", "leash_filter", chain_b);

  // Re-apply A with a changed policy: A's chains are replaced (counters start over), B's are
  // byte-for-byte the same listing — same handles, same counters.
  NetfilterSubject changed = subject_a_;
  changed.dns_resolvers.clear();
  ASSERT_TRUE(nf_->Apply(changed).ok());
  for (const auto& [family, table] : std::vector<std::pair<std::string, std::string>>{
           {"ip", "leash"}, {"ip6", "leash"}, {"inet", "leash_filter"}}) {
    absl::StatusOr<std::vector<uint32_t>> keys = MapKeys(*ns_, family, table);
    ASSERT_TRUE(keys.ok()) << keys.status();
    EXPECT_THAT(*keys, ::testing::Contains(b_->uid())) << family;
  }
  EXPECT_EQ(Listing("ip", "leash", chain_b), b_ip);
  EXPECT_EQ(Listing("ip6", "leash", chain_b), b_ip6);
  EXPECT_EQ(Listing("inet", "leash_filter", chain_b), b_inet);
  absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> a_counters =
      ChainCounters(*ns_, "ip", "leash", chain_a);
  ASSERT_TRUE(a_counters.ok());
  EXPECT_THAT(*a_counters, Each(Pair(0u, 0u)));
  // The change is in force: DNS to the old resolver is now dropped for A.
  EXPECT_EQ(Probe(a_, "udp", "192.0.2.11", 53), "error EPERM");

  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_EQ(Listing("ip", "leash", chain_b), b_ip);
  EXPECT_EQ(Listing("ip6", "leash", chain_b), b_ip6);
  EXPECT_EQ(Listing("inet", "leash_filter", chain_b), b_inet);
  EXPECT_EQ(Probe(b_, "tcp", "192.0.2.11", 443), "b 192.0.2.11:443");
}

}  // namespace
}  // namespace leash::controlplane
