// Inbound service, for real: a leashed test account listens on 0.0.0.0 and :: in the test
// namespace, and a second namespace joined to it by a veth pair stands in for a host off this
// one (its packets arrive over a real interface, never over loopback). By default that remote
// host gets not one byte from the listener and the drop is counted in the account's filter
// chain; loopback and the host's own addresses still reach it; network.inbound: allow restores
// service. Also: with SYN cookies the handshake completes yet nothing leaves, UDP answers are
// inbound service too, and TCP that another table's nat rule takes past the redirect is dropped.
// With the policy routing leashd applies with the chains (controlplane/inbound_routing.h), a
// remote client under SYN cookies gets not even a SYN-ACK, from the account's own UID or from
// one of its subordinate range, and every refused answer is counted under the subject, owned
// by a process or not; without the refusal device or the chains it is still refused.
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controlplane/inbound_routed_netfilter.h"
#include "controlplane/iptables_netfilter.h"
#include "controlplane/netfilter_factory.h"
#include "controlplane/nft_netfilter.h"
#include "controlplane/rtnl_route_rules.h"
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
using ::leash::testing::NetNamespace;
using ::leash::testing::TaggedServer;
using ::leash::testing::TestAccount;
using ::leash::testing::TrafficTest;
using ::testing::Gt;
using ::testing::HasSubstr;

constexpr uint16_t kProxyPort = 18101;
// The agent's own services, outside the proxy range.
constexpr uint16_t kListen4 = 28080;  // 0.0.0.0
constexpr uint16_t kListen6 = 28086;  // ::
constexpr uint16_t kListenUdp = 28053;
constexpr uint16_t kListenHeld = 28081;  // 0.0.0.0, connections kept open
// This host's address on the link to the remote one, and the remote host's.
constexpr char kHere4[] = "198.51.100.1";
constexpr char kHere6[] = "2001:db8:100::1";
constexpr char kRemote4[] = "198.51.100.2";

class InboundTrafficTest : public TrafficTest {
 protected:
  // The applier under test, created inside the test namespace.
  virtual absl::StatusOr<std::unique_ptr<Netfilter>> MakeNetfilter() {
    absl::StatusOr<std::unique_ptr<NftNetfilter>> nf = NftNetfilter::Create();
    if (!nf.ok()) return nf.status();
    return std::unique_ptr<Netfilter>(std::move(*nf));
  }

  void SetUp() override {
    TrafficTest::SetUp();
    if (!Ready()) return;
    absl::StatusOr<std::unique_ptr<NetNamespace>> remote = NetNamespace::Create();
    ASSERT_TRUE(remote.ok()) << remote.status();
    remote_ = std::move(*remote);
    absl::Status linked = ns_->AddVethTo(
        *remote_, "r0", {absl::StrCat(kHere4, "/24"), absl::StrCat(kHere6, "/64")}, "r1",
        {absl::StrCat(kRemote4, "/24"), "2001:db8:100::2/64"});
    ASSERT_TRUE(linked.ok()) << linked;
    // The remote host routes back to every address of this one (the agent's connections leave
    // from 192.0.2.x), and answers an echo before the first datagram a test counts on.
    for (const std::vector<std::string>& step : std::vector<std::vector<std::string>>{
             {"ip", "route", "add", "default", "via", kHere4},
             {"sysctl", "-qw", "net.ipv4.ping_group_range=0 0"}}) {
      absl::StatusOr<std::string> done = leash::testing::RunOk(remote_->Exec(step));
      ASSERT_TRUE(done.ok()) << done.status();
    }
    ASSERT_TRUE(leash::testing::WaitFor([&] { return FromRemote("icmp", kHere4, 0) == "echo reply"; },
                                        absl::Seconds(15)));
    {
      absl::StatusOr<NetNamespace::Entered> entered = remote_->Enter();
      ASSERT_TRUE(entered.ok()) << entered.status();
      absl::StatusOr<std::unique_ptr<TaggedServer>> server =
          TaggedServer::Start({{"remote", kRemote4, 443}});
      ASSERT_TRUE(server.ok()) << server.status();
      remote_server_ = std::move(*server);
    }
    absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    // The proxy's listener pair for account a, standing in: it says where a connection landed.
    absl::StatusOr<std::unique_ptr<TaggedServer>> proxy =
        TaggedServer::Start({{"proxy", "127.0.0.1", kProxyPort}, {"proxy", "::1", kProxyPort}});
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = std::move(*proxy);
    absl::StatusOr<std::unique_ptr<Netfilter>> nf = MakeNetfilter();
    ASSERT_TRUE(nf.ok()) << nf.status();
    nf_ = std::move(*nf);
    ASSERT_TRUE(nf_->Prepare().ok());
    // network.udp: allow, so an answer by UDP meets the inbound rule rather than the UDP drop.
    subject_ = MakeSubject(a_->uid(), kProxyPort, /*udp_allowed=*/true);
    absl::Status applied = nf_->Apply(subject_);
    ASSERT_TRUE(applied.ok()) << applied;
    ASSERT_NO_FATAL_FAILURE(Serve("serve", "0.0.0.0", kListen4, "agent"));
    ASSERT_NO_FATAL_FAILURE(Serve("serve", "::", kListen6, "agent6"));
    ASSERT_NO_FATAL_FAILURE(Serve("serve-udp", "0.0.0.0", kListenUdp, "agent-udp"));
    ASSERT_NO_FATAL_FAILURE(Serve("serve-hold", "0.0.0.0", kListenHeld, "held"));
  }

  // lnft_probe `mode address port reply` in the test namespace as account a, once it says it
  // is listening. Its output goes to a log under TEST_TMPDIR (see ServerLog).
  // `uid`: run as that UID instead of account a (one of a subject's subordinate range).
  void Serve(const std::string& mode, const std::string& address, uint16_t port,
             const std::string& reply, std::optional<uint32_t> uid = std::nullopt) {
    const std::string log = ServerLog(port);
    // The child truncates the log only once it runs: an earlier test's "listening" must not be
    // read as this server's.
    std::remove(log.c_str());
    absl::StatusOr<leash::testing::Background> serve = leash::testing::Background::Start(
        ns_->Exec(AsUid(uid, {probe_path(), mode, address, absl::StrCat(port),
                                      reply})),
        log);
    ASSERT_TRUE(serve.ok()) << serve.status();
    servers_.push_back(*std::move(serve));
    ASSERT_TRUE(leash::testing::WaitFor(
        [&] {
          std::ifstream in(log);
          std::string line;
          return std::getline(in, line) && line == "listening";
        },
        absl::Seconds(10)))
        << mode << " " << address << ":" << port;
  }
  std::vector<std::string> AsUid(std::optional<uint32_t> uid,
                                 const std::vector<std::string>& argv) const {
    if (!uid.has_value()) return a_->AsUser(argv);
    std::vector<std::string> out = {"setpriv", absl::StrCat("--reuid=", *uid),
                                    absl::StrCat("--regid=", *uid), "--clear-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  void SynCookiesAlways() {
    ASSERT_TRUE(leash::testing::RunOk(
                    ns_->Exec({"sysctl", "-qw", "net.ipv4.tcp_syncookies=2"}))
                    .ok());
  }
  static std::string ServerLog(uint16_t port) {
    return absl::StrCat(getenv("TEST_TMPDIR"), "/serve-", port);
  }
  static std::string ReadAll(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // lnft_probe as root in the remote namespace: a host off this one.
  std::string FromRemote(const std::string& proto, const std::string& address, uint16_t port) {
    absl::StatusOr<leash::testing::RunResult> run = remote_->Run(
        {probe_path(), proto, address, absl::StrCat(port)}, absl::Seconds(20));
    if (!run.ok()) return absl::StrCat("probe failed: ", run.status().ToString());
    return std::string(absl::StripAsciiWhitespace(run->out));
  }

  NetfilterCounters Counters() {
    absl::StatusOr<NetfilterCounters> counters = nf_->ReadCounters(a_->uid());
    EXPECT_TRUE(counters.ok()) << counters.status();
    return counters.value_or(NetfilterCounters{});
  }

  std::unique_ptr<NetNamespace> remote_;
  std::unique_ptr<TaggedServer> remote_server_;
  std::unique_ptr<TaggedServer> proxy_;
  std::vector<leash::testing::Background> servers_;
  std::unique_ptr<Netfilter> nf_;
  NetfilterSubject subject_;
};

// The iptables fallback, IPv4 only: the same world, the same listeners.
class IptablesInboundTest : public InboundTrafficTest {
 protected:
  absl::StatusOr<std::unique_ptr<Netfilter>> MakeNetfilter() override {
    absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter(NetfilterBackend::kIptables);
    if (!choice.ok()) return choice.status();
    notice_ = choice->notice;
    return std::move(choice->netfilter);
  }
  std::string notice_;
};

// The same world with the policy routing leashd applies with the chains.
class RoutedInboundTest : public InboundTrafficTest {
 protected:
  virtual absl::StatusOr<std::unique_ptr<Netfilter>> MakeChains() {
    return InboundTrafficTest::MakeNetfilter();
  }
  // Called inside the test namespace: the rtnetlink socket and the sysctl are its own.
  absl::StatusOr<std::unique_ptr<Netfilter>> MakeNetfilter() override {
    absl::StatusOr<std::unique_ptr<Netfilter>> chains = MakeChains();
    if (!chains.ok()) return chains.status();
    chains_ = std::move(*chains);
    absl::StatusOr<std::unique_ptr<RtnlRouteRules>> rules = RtnlRouteRules::Open();
    if (!rules.ok()) return rules.status();
    rules_ = std::move(*rules);
    const std::string saved = absl::StrCat(getenv("TEST_TMPDIR"), "/fwmark_accept.saved");
    std::remove(saved.c_str());
    routing_ = std::make_unique<InboundRouting>(rules_.get(), saved);
    return std::unique_ptr<Netfilter>(new InboundRoutedNetfilter(chains_.get(), routing_.get()));
  }
  std::string IpRules(const std::string& family) {
    absl::StatusOr<std::string> out =
        leash::testing::RunOk(ns_->Exec({"ip", family, "rule", "show"}));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }
  std::string RefusalOf(uint32_t uid) const { return absl::StrCat("lookup ", uid, " prohibit"); }
  std::string CountedRefusalOf(uint32_t uid) const {
    return absl::StrCat("lookup ", SubjectTable(uid), " proto 76");
  }
  // The peer that keeps a zero window (see AZeroWindowPeerGetsNothingFromASocketItsProcessClosed).
  void BlockTheRemotesResets() {
    for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
             {"add", "table", "ip", "peer"},
             {"add", "chain", "ip", "peer", "out", "{ type filter hook output priority 0; }"},
             {"add", "rule", "ip", "peer", "out", "tcp", "flags", "rst", "drop"}}) {
      absl::StatusOr<std::string> done = leash::testing::Nft(*remote_, command);
      ASSERT_TRUE(done.ok()) << done.status();
    }
  }
  std::string ZeroWindowPeer() {
    absl::StatusOr<leash::testing::RunResult> run = remote_->Run(
        {"/usr/bin/python3",
         absl::StrCat(getenv("TEST_SRCDIR"), "/leash/test/network/zero_window_peer.py"), kRemote4,
         kHere4, absl::StrCat(kListen4)},
        absl::Seconds(30));
    if (!run.ok()) return absl::StrCat("peer failed: ", run.status().ToString());
    return std::string(absl::StripAsciiWhitespace(run->out));
  }
  uint64_t Dropped() { return Counters().inbound_dropped_packets; }

  std::unique_ptr<Netfilter> chains_;
  std::unique_ptr<RtnlRouteRules> rules_;
  std::unique_ptr<InboundRouting> routing_;
};

class IptablesRoutedInboundTest : public RoutedInboundTest {
 protected:
  absl::StatusOr<std::unique_ptr<Netfilter>> MakeChains() override {
    absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter(NetfilterBackend::kIptables);
    if (!choice.ok()) return choice.status();
    return std::move(choice->netfilter);
  }
};

TEST_F(InboundTrafficTest, ARemoteHostGetsNoByteFromTheAgentsListenerAndTheDropIsCounted) {
  EXPECT_EQ(Counters().inbound_dropped_packets, 0u);
  // The SYN-ACK is the agent's first answer: dropped, so no connection is ever made.
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "timeout");
  // The IPv4 listener's SYN-ACKs and their retransmissions, and the IPv6 one's.
  EXPECT_THAT(Counters().inbound_dropped_packets, Gt(1u));
  EXPECT_EQ(Counters().unproxied_dropped_packets, 0u);
  // A UID without a chain has no counters to read.
  EXPECT_TRUE(absl::IsNotFound(nf_->ReadCounters(b_->uid()).status()));
}

// The rules judge answers and TCP past the proxy, not the agent's own connections: one to the
// remote host, which leaves by another interface than the one it was first routed to, still
// lands on its proxy listener with its original destination.
TEST_F(InboundTrafficTest, TheAgentsOwnConnectionsToTheRemoteHostStillReachItsProxyListener) {
  EXPECT_EQ(Probe(a_, "tcp", kRemote4, 443), absl::StrCat("proxy ", kRemote4, ":443"));
  EXPECT_EQ(Probe(a_, "tcp", "2001:db8:100::2", 443), "proxy [2001:db8:100::2]:443");
  const NetfilterCounters counters = Counters();
  EXPECT_EQ(counters.inbound_dropped_packets, 0u);
  EXPECT_EQ(counters.unproxied_dropped_packets, 0u);
}

// "unless the peer is loopback (local dev servers keep working)": a client on this host, at
// 127.0.0.1, ::1, or the host's own address on the link (which the kernel routes over lo).
TEST_F(InboundTrafficTest, LoopbackAndTheHostsOwnAddressesStillReachTheListener) {
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListen4), "agent");
  EXPECT_EQ(Probe(nullptr, "tcp", "::1", kListen6), "agent6");
  EXPECT_EQ(Probe(nullptr, "tcp", kHere4, kListen4), "agent");
  EXPECT_EQ(Probe(nullptr, "tcp", kHere6, kListen6), "agent6");
  // Another leashed account on this host is a local client too.
  ASSERT_TRUE(nf_->Apply(MakeSubject(b_->uid(), kProxyPort + 1)).ok());
  EXPECT_EQ(Probe(b_, "tcp", "127.0.0.1", kListen4), "agent");
  EXPECT_EQ(Counters().inbound_dropped_packets, 0u);
}

TEST_F(InboundTrafficTest, InboundAllowRestoresServiceToARemoteHost) {
  NetfilterSubject allowed = subject_;
  allowed.inbound_allowed = true;
  ASSERT_TRUE(nf_->Apply(allowed).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "agent");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "agent6");
  const NetfilterCounters counters = Counters();
  EXPECT_THAT(counters.inbound_allowed_packets, Gt(1u));
  EXPECT_EQ(counters.inbound_dropped_packets, 0u);
  // Back to drop: the same listener is cut off again.
  ASSERT_TRUE(nf_->Apply(subject_).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
}

// A SYN-ACK sent as a SYN cookie carries no socket, so no UID, and leaves; the handshake then
// completes (a remote peer can force cookies by keeping the listener's queue full). While the
// agent's process holds the accepted socket, every byte it sends carries its UID, and is
// dropped.
TEST_F(InboundTrafficTest, WithSynCookiesTheHandshakeCompletesButNoByteLeavesAHeldSocket) {
  ASSERT_TRUE(leash::testing::RunOk(
                  ns_->Exec({"sysctl", "-qw", "net.ipv4.tcp_syncookies=2"}))
                  .ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "silent");
  // The cookie SYN-ACK had no UID; the answer after it did.
  EXPECT_THAT(Counters().inbound_dropped_packets, Gt(0u));
  // The same listener still serves a client on this host.
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListenHeld), "held (still open)");
}

// The listener that writes and closes at once: what the kernel retransmits for the closed
// socket has no UID, so no per-UID chain sees it. The connection was labelled when its first
// answer was refused, and the guard table drops the rest, the FIN included.
TEST_F(InboundTrafficTest, WithSynCookiesASocketClosedAtOnceSendsNothingEither) {
  ASSERT_TRUE(leash::testing::RunOk(
                  ns_->Exec({"sysctl", "-qw", "net.ipv4.tcp_syncookies=2"}))
                  .ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "silent");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "silent");
  absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> guard =
      leash::testing::ChainCounters(*ns_, "inet", "leash_guard", "output");
  ASSERT_TRUE(guard.ok()) << guard.status();
  ASSERT_EQ(guard->size(), 1u);
  EXPECT_THAT(guard->front().first, Gt(0u));
}

// An answer by datagram to a peer off the host is inbound service as much as a TCP one: under
// network.udp: allow it is still dropped unless network.inbound is allow too.
TEST_F(InboundTrafficTest, UdpAnswersToARemoteHostAreInboundService) {
  EXPECT_EQ(FromRemote("udp", kHere4, kListenUdp), "timeout");
  EXPECT_THAT(ReadAll(ServerLog(kListenUdp)), HasSubstr("reply error EPERM"));
  EXPECT_THAT(Counters().inbound_dropped_packets, Gt(0u));
  EXPECT_EQ(Probe(nullptr, "udp", "127.0.0.1", kListenUdp), "agent-udp");
  NetfilterSubject allowed = subject_;
  allowed.inbound_allowed = true;
  ASSERT_TRUE(nf_->Apply(allowed).ok());
  EXPECT_EQ(FromRemote("udp", kHere4, kListenUdp), "agent-udp");
  // With network.udp: drop, network.inbound: allow restores TCP only.
  allowed.udp_allowed = false;
  ASSERT_TRUE(nf_->Apply(allowed).ok());
  EXPECT_EQ(FromRemote("udp", kHere4, kListenUdp), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "agent");
}

// Every TCP packet the agent originates leaves by loopback (to the proxy, or to a local
// service). One that would leave by another interface escaped the redirect — here because
// another table's nat rule, earlier in the hook, took the connection first — and is dropped.
TEST_F(InboundTrafficTest, TcpThatEscapesTheRedirectIsDroppedAndCounted) {
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"add", "table", "ip", "other"},
           {"add", "chain", "ip", "other", "out",
            "{ type nat hook output priority -150; policy accept; }"},
           {"add", "rule", "ip", "other", "out", "meta", "skuid", absl::StrCat(a_->uid()), "ip",
            "daddr", "192.0.2.11", "tcp", "dport", "443", "dnat", "to", kRemote4}}) {
    absl::StatusOr<std::string> done = leash::testing::Nft(*ns_, command);
    ASSERT_TRUE(done.ok()) << done.status();
  }
  EXPECT_EQ(Probe(a_, "tcp", "192.0.2.11", 443), "timeout");
  EXPECT_THAT(Counters().unproxied_dropped_packets, Gt(0u));
  EXPECT_EQ(Counters().inbound_dropped_packets, 0u);
  // Without Leash's chains the other rule's destination answers: the drop was Leash's.
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_THAT(Probe(a_, "tcp", "192.0.2.11", 443), HasSubstr("remote"));
}

TEST_F(IptablesInboundTest, Ipv4AnswersToARemoteHostAreDroppedAndCountedIpv6OnesAreNot) {
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
  EXPECT_THAT(Counters().inbound_dropped_packets, Gt(1u));
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListen4), "agent");
  EXPECT_EQ(Probe(nullptr, "tcp", kHere4, kListen4), "agent");
  // The documented gap, said on stderr when the fallback is chosen.
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "agent6");
  EXPECT_THAT(notice_, HasSubstr("inbound service (network.inbound) is not dropped"));
}

TEST_F(IptablesInboundTest, WithSynCookiesASocketClosedAtOnceSendsNothingEither) {
  ASSERT_TRUE(leash::testing::RunOk(
                  ns_->Exec({"sysctl", "-qw", "net.ipv4.tcp_syncookies=2"}))
                  .ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "silent");
  absl::StatusOr<std::string> saved = leash::testing::RunOk(
      ns_->Exec({DefaultIptablesCommand() + "-save", "-c", "-t", "filter"}));
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(HasIptablesGuard(*saved)) << *saved;
  EXPECT_THAT(*saved, ::testing::Not(::testing::ContainsRegex(R"(\[0:0\] -A OUTPUT [^\n]*leash-guard)")))
      << "the guard dropped nothing";
}

TEST_F(IptablesInboundTest, TheAgentsOwnConnectionsToTheRemoteHostStillReachItsProxyListener) {
  EXPECT_EQ(Probe(a_, "tcp", kRemote4, 443), absl::StrCat("proxy ", kRemote4, ":443"));
  EXPECT_EQ(Counters().unproxied_dropped_packets, 0u);
}

TEST_F(IptablesInboundTest, InboundAllowRestoresIpv4ServiceAndReleaseRemovesTheFilterRules) {
  NetfilterSubject allowed = subject_;
  allowed.inbound_allowed = true;
  ASSERT_TRUE(nf_->Apply(allowed).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "agent");
  ASSERT_TRUE(nf_->Apply(subject_).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "agent");
  EXPECT_TRUE(absl::IsNotFound(nf_->ReadCounters(a_->uid()).status()));
}


// A SYN-ACK sent as a SYN cookie has no socket and so no UID for nftables, but its route
// lookup carries the listener's own UID and the mark of the SYN from off the host: refused.
// Clients on this host are unmarked and served; the agent's own connections are untouched.
TEST_F(RoutedInboundTest, WithSynCookiesARemoteClientGetsNoSynAckAndNoByte) {
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "timeout");
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListenHeld), "held (still open)");
  EXPECT_EQ(Probe(nullptr, "tcp", kHere4, kListen4), "agent");
  EXPECT_EQ(Probe(nullptr, "tcp", "::1", kListen6), "agent6");
  EXPECT_EQ(Probe(a_, "tcp", kRemote4, 443), absl::StrCat("proxy ", kRemote4, ":443"));
  // Without the routing (the chains alone) the cookie handshake completes: what it closes.
  ASSERT_TRUE(routing_->Release(a_->uid()).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "silent");
}

TEST_F(RoutedInboundTest, InboundAllowRemovesTheRulesAndTheRemoteHostIsServed) {
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  EXPECT_THAT(IpRules("-4"), HasSubstr(RefusalOf(a_->uid())));
  NetfilterSubject allowed = subject_;
  allowed.inbound_allowed = true;
  ASSERT_TRUE(nf_->Apply(allowed).ok());
  EXPECT_THAT(IpRules("-4"), ::testing::Not(HasSubstr(RefusalOf(a_->uid()))));
  EXPECT_THAT(IpRules("-6"), ::testing::Not(HasSubstr(RefusalOf(a_->uid()))));
  EXPECT_THAT(IpRules("-4"), ::testing::Not(HasSubstr(CountedRefusalOf(a_->uid()))));
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "agent");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "agent6");
  EXPECT_EQ(Dropped(), 0u);
  ASSERT_TRUE(nf_->Apply(subject_).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
  EXPECT_THAT(Dropped(), Gt(0u));
  // Releasing the subject releases its rules with its chains.
  ASSERT_TRUE(nf_->Release(a_->uid()).ok());
  EXPECT_THAT(IpRules("-4"), ::testing::Not(HasSubstr(RefusalOf(a_->uid()))));
  EXPECT_THAT(IpRules("-4"), ::testing::Not(HasSubstr(CountedRefusalOf(a_->uid()))));
}

// A listener run under a UID of the subject's subordinate range (what the agent gets inside a
// user namespace it maps) is the subject's too.
TEST_F(RoutedInboundTest, ASubordinateUidsListenerIsCovered) {
  const uint32_t first = 3000000000u + static_cast<uint32_t>(getpid() % 100000) * 10;
  constexpr uint16_t kListenInner = 28090;
  NetfilterSubject ranged = subject_;
  ranged.subordinate_uids = {{first, first + 9}};
  ASSERT_TRUE(nf_->Apply(ranged).ok());
  EXPECT_THAT(IpRules("-4"), HasSubstr(absl::StrCat("uidrange ", first, "-", first + 9)));
  ASSERT_NO_FATAL_FAILURE(Serve("serve-hold", "0.0.0.0", kListenInner, "inner", first + 3));
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenInner), "timeout");
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListenInner), "inner (still open)");
  // Counted under the subject, whose realm is its own UID, not the listener's.
  EXPECT_THAT(Dropped(), Gt(0u));
  ASSERT_TRUE(routing_->Release(a_->uid()).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenInner), "silent");
}

// A peer with a TCP stack of its own advertises a zero window from the handshake on: the
// listener accepts, writes and closes while nothing can be sent, so no packet ever carried its
// UID and nothing labelled the connection; the orphaned socket sends the data once the window
// opens. With the routing there is no handshake to begin with.
TEST_F(RoutedInboundTest, AZeroWindowPeerGetsNothingFromASocketItsProcessClosed) {
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  // The remote host's own stack would reset the handshake its raw socket makes.
  ASSERT_NO_FATAL_FAILURE(BlockTheRemotesResets());
  EXPECT_EQ(ZeroWindowPeer(), "no syn-ack");
  // Its cookie SYN-ACKs, which no process owns, are counted under the subject.
  EXPECT_THAT(Dropped(), Gt(0u));
  // The chains alone: the orphan's data leaves.
  ASSERT_TRUE(routing_->Release(a_->uid()).ok());
  EXPECT_EQ(ZeroWindowPeer(), "data agent");
}

// Every answer refused at the route lookup is counted under the subject: a listener's
// SYN-ACK (its socket has an owner), a SYN cookie's (none), IPv4 and IPv6, and the count is
// what `leash status` reads (Netfilter::ReadCounters). Loopback clients add nothing to it.
TEST_F(RoutedInboundTest, RefusedAnswersAreCountedUnderTheSubjectOwnedByAProcessOrNot) {
  EXPECT_THAT(IpRules("-4"), HasSubstr(CountedRefusalOf(a_->uid())));
  EXPECT_THAT(IpRules("-6"), HasSubstr(CountedRefusalOf(a_->uid())));
  EXPECT_EQ(Dropped(), 0u);
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListen4), "agent");
  EXPECT_EQ(Probe(nullptr, "tcp", kHere4, kListen4), "agent");
  EXPECT_EQ(Dropped(), 0u);
  // A normal listener: the SYN-ACK and its retransmissions.
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
  const uint64_t after_listener = Dropped();
  EXPECT_THAT(after_listener, Gt(0u));
  // SYN cookies: no socket owns the SYN-ACK; the route names the subject.
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "timeout");
  const uint64_t after_cookies4 = Dropped();
  EXPECT_THAT(after_cookies4, Gt(after_listener));
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "timeout");
  EXPECT_THAT(Dropped(), Gt(after_cookies4));
  EXPECT_EQ(Counters().unproxied_dropped_packets, 0u);
  // Another subject's counters are its own.
  const uint32_t other = b_->uid();
  ASSERT_TRUE(nf_->Apply(MakeSubject(other, kProxyPort + 1)).ok());
  absl::StatusOr<NetfilterCounters> others = nf_->ReadCounters(other);
  ASSERT_TRUE(others.ok()) << others.status();
  EXPECT_EQ(others->inbound_dropped_packets, 0u);
}

// The counting path is an addition, never the refusal itself: without the refusal device (its
// routes go with it) the prohibits refuse, uncounted; without the chains that count, the
// device drops what is routed to it.
TEST_F(RoutedInboundTest, WithoutTheCountingPathAnswersAreStillRefused) {
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  ASSERT_TRUE(leash::testing::RunOk(ns_->Exec({"ip", "link", "del", kRefusalDevice})).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "timeout");
  EXPECT_EQ(Dropped(), 0u);
  // The next apply makes it again and routes there: counted again.
  ASSERT_TRUE(nf_->Apply(subject_).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "timeout");
  EXPECT_THAT(Dropped(), Gt(0u));
  // The filter table gone (no chain, no dispatch): the device is the last stop.
  ASSERT_TRUE(leash::testing::Nft(*ns_, {"delete", "table", "inet", "leash_filter"}).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere6, kListen6), "timeout");
  EXPECT_EQ(FromRemote("tcp", kHere4, kListen4), "timeout");
}

TEST_F(IptablesRoutedInboundTest, WithSynCookiesARemoteClientGetsNoSynAckAndNoByte) {
  ASSERT_NO_FATAL_FAILURE(SynCookiesAlways());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "timeout");
  EXPECT_EQ(Probe(nullptr, "tcp", "127.0.0.1", kListenHeld), "held (still open)");
  absl::StatusOr<std::string> mangle = leash::testing::RunOk(
      ns_->Exec({DefaultIptablesCommand() + "-save", "-t", "mangle"}));
  ASSERT_TRUE(mangle.ok()) << mangle.status();
  EXPECT_TRUE(HasIptablesInboundMark(*mangle)) << *mangle;
  ASSERT_TRUE(routing_->Release(a_->uid()).ok());
  EXPECT_EQ(FromRemote("tcp", kHere4, kListenHeld), "silent");
}

}  // namespace
}  // namespace leash::controlplane
