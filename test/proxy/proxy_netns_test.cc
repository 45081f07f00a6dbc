// leash-proxy end to end, as root, in a network namespace: three agent accounts (two policies
// and one with none), the redirect rules, test hosts on a veth pair (192.0.2.11/.12 and
// 2001:db8::11/::12, each serving ports 80 and 443), local services on loopback, leashd's real
// PolicyStream service, and the real leash-proxy process. Every connection below is a real one made by a test account,
// redirected by the kernel and judged by the proxy; SO_ORIGINAL_DST is the kernel's.
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proxy/testing/upstream_server.h"
#include "test/fixtures/root.h"
#include "test/proxy/testbed.h"

namespace leash::testing {
namespace {

using proxy::testing::UpstreamServer;

constexpr size_t kA = 0, kB = 1, kC = 2;
constexpr uint16_t kPortA = 18001, kPortB = 18002, kPortC = 18003;
// Local services on the wildcard (0.0.0.0 and ::), reached through AnyIP routes.
constexpr uint16_t kWildcardPortV4 = 8081, kWildcardPortV6 = 8082;
constexpr char kPolicyA[] =
    R"pb(network { mode: MODE_WHITELIST allow { entries: "allowed-a.test" } })pb";
constexpr char kPolicyB[] =
    R"pb(network { mode: MODE_WHITELIST allow { entries: "allowed-b.test" } })pb";

class ProxyNetnsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;  // each test fails on LEASH_REQUIRE_ROOT
    setup_ = new absl::Status(SetUpBed());
  }
  static absl::Status SetUpBed() {
    TestbedOptions options;
    options.agents = {{"lpx-a", kPortA}, {"lpx-b", kPortB}, {"lpx-c", kPortC}};
    options.v0_addresses = {"192.0.2.10/24", "2001:db8::10/64"};
    options.v1_addresses = {"192.0.2.11/24", "192.0.2.12/24", "2001:db8::11/64", "2001:db8::12/64"};
    options.hosts_file =
        "192.0.2.11 allowed-a.test allowed-b.test\n2001:db8::11 allowed-a.test allowed-b.test\n"
        // Allowed names (suffixes of allowed-a.test) whose hosts fail the proxy's connection.
        "192.0.2.12 reset.allowed-a.test\n"
        "192.0.2.99 blackholed.allowed-a.test\n"
        "198.51.100.7 unreachable.allowed-a.test\n"
        // Allowed names that lead where the destination guard keeps names out (DNS rebinding
        // toward the metadata endpoint, the private network, this host's own services).
        "169.254.169.254 metadata.allowed-a.test\n"
        "10.20.30.40 private.allowed-a.test\n"
        "127.0.0.1 loopback.allowed-a.test\n"
        "192.0.2.10 own.allowed-a.test\n"
        "203.0.113.50 late.allowed-a.test\n"
        // Addresses this host holds only through a `local` route (AnyIP), on no interface.
        "192.0.2.225 anyip.allowed-a.test\n"
        "2001:db8:ab::5 anyip6.allowed-a.test\n";
    // A short connect timeout, so a blackholed upstream times out within the test.
    options.proxy_flags = {"--peek-timeout=300ms", "--connect-timeout=2s"};
    options.helpers = {"test/proxy/probe"};
    absl::StatusOr<std::unique_ptr<ProxyTestbed>> bed = ProxyTestbed::Create(options);
    if (!bed.ok()) return bed.status();
    bed_ = bed->release();
    // The metadata and private stand-ins live on the remote end, routed to from this host.
    for (const auto& [remote, argv] :
         {std::pair<bool, std::vector<std::string>>{
              true, {"ip", "addr", "add", "169.254.169.254/32", "dev", "v1"}},
          {true, {"ip", "addr", "add", "10.20.30.40/32", "dev", "v1"}},
          {false, {"ip", "route", "add", "169.254.169.254/32", "dev", "v0"}},
          {false, {"ip", "route", "add", "10.20.30.40/32", "dev", "v0"}},
          // AnyIP: this host answers for a whole range through one route to lo, with no
          // interface holding any of its addresses.
          {false, {"ip", "route", "add", "local", "192.0.2.224/27", "dev", "lo"}},
          {false, {"ip", "-6", "route", "add", "local", "2001:db8:ab::/64", "dev", "lo"}}}) {
      absl::StatusOr<RunResult> run = (remote ? bed_->remote() : bed_->ns()).Run(argv);
      if (!run.ok()) return run.status();
      if (run->exit_code != 0) {
        return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), ": ", run->out));
      }
    }
    servers_ = new std::vector<std::unique_ptr<UpstreamServer>>();
    {
      // The test hosts, off this host (the remote namespace).
      absl::StatusOr<NetNamespace::Entered> entered = bed_->remote().Enter();
      if (!entered.ok()) return entered.status();
      for (const char* ip : {"192.0.2.11", "192.0.2.12", "2001:db8::11", "2001:db8::12"}) {
        for (uint16_t port : {80, 443}) {
          servers_->push_back(std::make_unique<UpstreamServer>(
              proxy::SocketAddress{*engine::ParseIpAddress(ip), port}));
        }
      }
      servers_->push_back(std::make_unique<UpstreamServer>(
          proxy::SocketAddress{*engine::ParseIpAddress("192.0.2.12"), 82},
          UpstreamServer::Behaviour::kResetAfterFirstBytes));
      // Stand-ins for the metadata endpoint and a private host, inside these test namespaces
      // only (nothing routes out of them).
      for (const char* ip : {"169.254.169.254", "10.20.30.40"}) {
        servers_->push_back(std::make_unique<UpstreamServer>(
            proxy::SocketAddress{*engine::ParseIpAddress(ip), 80}));
      }
    }
    {
      // Local services of this host.
      absl::StatusOr<NetNamespace::Entered> entered = bed_->ns().Enter();
      if (!entered.ok()) return entered.status();
      servers_->push_back(std::make_unique<UpstreamServer>(
          proxy::SocketAddress{*engine::ParseIpAddress("192.0.2.10"), 80}));
      for (uint16_t port : {9000, 18500}) {
        servers_->push_back(std::make_unique<UpstreamServer>(
            proxy::SocketAddress{*engine::ParseIpAddress("127.0.0.1"), port}));
      }
      // Services on the wildcard, which answer on every address the host routes locally.
      servers_->push_back(std::make_unique<UpstreamServer>(
          proxy::SocketAddress{*engine::ParseIpAddress("0.0.0.0"), kWildcardPortV4}));
      servers_->push_back(std::make_unique<UpstreamServer>(
          proxy::SocketAddress{*engine::ParseIpAddress("::"), kWildcardPortV6}));
      for (const auto& server : *servers_) {
        if (!server->ok()) {
          return absl::InternalError(absl::StrCat("cannot serve ", server->Greeting()));
        }
      }
    }
    // 192.0.2.99 swallows every packet (a blackholed host); 198.51.100.0/24 has no route.
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{"nft", "add table inet lpx_blackhole"},
          std::vector<std::string>{"nft", "add chain inet lpx_blackhole out { type filter hook output priority 0 ; }"},
          std::vector<std::string>{"nft", "add rule inet lpx_blackhole out ip daddr 192.0.2.99 drop"},
          std::vector<std::string>{"ip", "route", "add", "unreachable", "198.51.100.0/24"}}) {
      absl::StatusOr<RunResult> run = bed_->RunAsRoot(argv);
      if (!run.ok()) return run.status();
      if (run->exit_code != 0) {
        return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), ": ", run->out));
      }
    }
    if (absl::Status started = bed_->StartProxy(); !started.ok()) return started;
    return bed_->PublishAndWait({bed_->Subject(kA, kPolicyA), bed_->Subject(kB, kPolicyB),
                                 bed_->NoPolicySubject(kC, "profile lpx-missing is missing")})
        .status();
  }
  static void TearDownTestSuite() {
    if (servers_ != nullptr) delete servers_;
    if (bed_ != nullptr) delete bed_;
    delete setup_;
    servers_ = nullptr;
    bed_ = nullptr;
    setup_ = nullptr;
  }

  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    ASSERT_NE(setup_, nullptr);
    ASSERT_TRUE(setup_->ok()) << *setup_;
    records_before_ = bed_->Records().size();
  }

  static UpstreamServer& Server(const std::string& greeting_address) {
    for (const auto& server : *servers_) {
      if (server->Greeting() == "SERVER " + greeting_address) return *server;
    }
    ADD_FAILURE() << "no server " << greeting_address;
    return *servers_->front();
  }

  // What `probe` printed when run as `agent` (or root for agent == kRoot).
  static constexpr size_t kRoot = 99;
  std::string Probe(size_t agent, const std::string& target, const std::string& mode,
                    const std::string& name = "") {
    std::vector<std::string> argv = {bed_->Helper("probe"), target, mode};
    if (!name.empty()) argv.push_back(name);
    absl::StatusOr<RunResult> run = agent == kRoot ? bed_->RunAsRoot(argv) : bed_->RunAs(agent, argv);
    if (!run.ok()) return run.status().ToString();
    return std::string(absl::StripTrailingAsciiWhitespace(run->out));
  }

  // The first record written since this test began that `match` accepts (waits up to 5 s).
  leash::v1::DecisionRecord Record(const std::function<bool(const leash::v1::DecisionRecord&)>& match) {
    leash::v1::DecisionRecord found;
    const bool ok = WaitFor(
        [&] {
          const std::vector<leash::v1::DecisionRecord> records = bed_->Records();
          for (size_t i = records_before_; i < records.size(); ++i) {
            if (match(records[i])) {
              found = records[i];
              return true;
            }
          }
          return false;
        },
        absl::Seconds(5));
    if (!ok) ADD_FAILURE() << "no matching decision record in " << bed_->decision_log_path();
    return found;
  }
  leash::v1::DecisionRecord RecordFor(size_t agent, const std::string& domain, uint32_t port) {
    const uint32_t uid = bed_->uid(agent);
    return Record([&](const leash::v1::DecisionRecord& r) {
      return r.uid() == uid && r.subject().domain() == domain && r.subject().port() == port;
    });
  }

  static bool ReachedRealHost(const std::string& output, uint16_t port) {
    return output == absl::StrCat("LINE SERVER 192.0.2.11:", port) ||
           output == absl::StrCat("LINE SERVER [2001:db8::11]:", port);
  }

  static absl::Status* setup_;
  static ProxyTestbed* bed_;
  static std::vector<std::unique_ptr<UpstreamServer>>* servers_;
  size_t records_before_ = 0;
};

absl::Status* ProxyNetnsTest::setup_ = nullptr;
ProxyTestbed* ProxyNetnsTest::bed_ = nullptr;
std::vector<std::unique_ptr<UpstreamServer>>* ProxyNetnsTest::servers_ = nullptr;

TEST_F(ProxyNetnsTest, HttpByHostIsAllowedAndBlockedPerAccount) {
  EXPECT_TRUE(ReachedRealHost(Probe(kA, "192.0.2.11:80", "http", "allowed-a.test"), 80));
  EXPECT_EQ(Probe(kA, "192.0.2.11:80", "http", "allowed-b.test"), "RESET");
  EXPECT_TRUE(ReachedRealHost(Probe(kB, "192.0.2.11:80", "http", "allowed-b.test"), 80));
  EXPECT_EQ(Probe(kB, "192.0.2.11:80", "http", "allowed-a.test"), "RESET");

  const leash::v1::DecisionRecord allowed = RecordFor(kA, "allowed-a.test", 80);
  EXPECT_EQ(allowed.action(), "allow");
  EXPECT_EQ(allowed.surface(), "network");
  EXPECT_EQ(allowed.subject().ip(), "192.0.2.11");  // SO_ORIGINAL_DST, read from the kernel
  const leash::v1::DecisionRecord blocked = RecordFor(kA, "allowed-b.test", 80);
  EXPECT_EQ(blocked.action(), "block");
  EXPECT_EQ(blocked.ref().size(), 8u);
  EXPECT_TRUE(absl::StrContains(blocked.reason(), "not in allow list")) << blocked.reason();
  EXPECT_EQ(RecordFor(kB, "allowed-b.test", 80).action(), "allow");
  EXPECT_EQ(RecordFor(kB, "allowed-a.test", 80).action(), "block");
}

TEST_F(ProxyNetnsTest, HttpsBySniIsAllowedAndBlockedPerAccount) {
  EXPECT_TRUE(ReachedRealHost(Probe(kA, "192.0.2.11:443", "tls", "allowed-a.test"), 443));
  EXPECT_EQ(Probe(kA, "192.0.2.11:443", "tls", "allowed-b.test"), "RESET");
  EXPECT_TRUE(ReachedRealHost(Probe(kB, "192.0.2.11:443", "tls", "allowed-b.test"), 443));
  EXPECT_EQ(Probe(kB, "192.0.2.11:443", "tls", "allowed-a.test"), "RESET");
  const leash::v1::DecisionRecord allowed = RecordFor(kA, "allowed-a.test", 443);
  EXPECT_EQ(allowed.action(), "allow");
  EXPECT_TRUE(absl::StrContains(allowed.reason(), "TLS SNI")) << allowed.reason();
  EXPECT_EQ(RecordFor(kB, "allowed-a.test", 443).action(), "block");
}

TEST_F(ProxyNetnsTest, ARealTlsClientsHelloIsReadAndJudged) {
  // curl's own ClientHello (OpenSSL). The upstream is no TLS server, so curl fails after the
  // proxy let it through; what matters is the decision made on its SNI.
  bed_->RunAs(kA, {"curl", "-sk", "--max-time", "5", "--resolve", "allowed-a.test:443:192.0.2.11",
                   "https://allowed-a.test/"})
      .IgnoreError();
  bed_->RunAs(kA, {"curl", "-sk", "--max-time", "5", "--resolve", "allowed-b.test:443:192.0.2.11",
                   "https://allowed-b.test/"})
      .IgnoreError();
  EXPECT_EQ(RecordFor(kA, "allowed-a.test", 443).action(), "allow");
  EXPECT_EQ(RecordFor(kA, "allowed-b.test", 443).action(), "block");
}

TEST_F(ProxyNetnsTest, Ipv6IsJudgedTheSame) {
  EXPECT_TRUE(ReachedRealHost(Probe(kA, "[2001:db8::11]:443", "tls", "allowed-a.test"), 443));
  EXPECT_EQ(Probe(kA, "[2001:db8::11]:443", "tls", "allowed-b.test"), "RESET");
  EXPECT_TRUE(ReachedRealHost(Probe(kB, "[2001:db8::11]:80", "http", "allowed-b.test"), 80));
  EXPECT_EQ(Probe(kB, "[2001:db8::11]:80", "http", "allowed-a.test"), "RESET");
  const leash::v1::DecisionRecord blocked = RecordFor(kA, "allowed-b.test", 443);
  EXPECT_EQ(blocked.action(), "block");
  EXPECT_EQ(blocked.subject().ip(), "2001:db8::11");  // IP6T_SO_ORIGINAL_DST
}

TEST_F(ProxyNetnsTest, SniSpoofingReachesOnlyTheAddressTheProxyResolved) {
  const int foreign_before = Server("192.0.2.12:443").accepted() + Server("[2001:db8::12]:443").accepted() +
                             Server("192.0.2.12:80").accepted();
  // An allowed name aimed at a foreign address: the proxy connects to what allowed-a.test
  // resolves to (192.0.2.11 / 2001:db8::11), never to .12.
  EXPECT_TRUE(ReachedRealHost(Probe(kA, "192.0.2.12:443", "tls", "allowed-a.test"), 443));
  EXPECT_TRUE(ReachedRealHost(Probe(kA, "[2001:db8::12]:443", "tls", "allowed-a.test"), 443));
  EXPECT_TRUE(ReachedRealHost(Probe(kA, "192.0.2.12:80", "http", "allowed-a.test"), 80));
  EXPECT_EQ(Server("192.0.2.12:443").accepted() + Server("[2001:db8::12]:443").accepted() +
                Server("192.0.2.12:80").accepted(),
            foreign_before);
  const leash::v1::DecisionRecord record = Record([&](const leash::v1::DecisionRecord& r) {
    return r.uid() == bed_->uid(kA) && r.subject().ip() == "192.0.2.12" && r.subject().port() == 443;
  });
  EXPECT_EQ(record.action(), "allow");
  EXPECT_TRUE(absl::StrContains(record.reason(), "resolved by the proxy")) << record.reason();
}

TEST_F(ProxyNetnsTest, DirectConnectionsToListenersAreRefusedUnderTheAttemptingUid) {
  // Its own listener, the other agent's (v4 and v6): redirected to its own listener.
  EXPECT_EQ(Probe(kA, absl::StrCat("127.0.0.1:", kPortA), "http", "allowed-a.test"), "RESET");
  EXPECT_EQ(Probe(kA, absl::StrCat("127.0.0.1:", kPortB), "http", "allowed-b.test"), "RESET");
  EXPECT_EQ(Probe(kA, absl::StrCat("[::1]:", kPortB), "http", "allowed-b.test"), "RESET");

  const uint32_t a = bed_->uid(kA);
  auto critical_for = [&](const std::string& ip, uint32_t port, const std::string& fragment) {
    return Record([&](const leash::v1::DecisionRecord& r) {
      return r.uid() == a && r.severity() == "critical" && r.subject().ip() == ip &&
             r.subject().port() == port && absl::StrContains(r.reason(), fragment);
    });
  };
  const leash::v1::DecisionRecord own = critical_for("127.0.0.1", kPortA, "this listener's own address");
  EXPECT_EQ(own.action(), "block");
  EXPECT_TRUE(absl::StrContains(own.reason(), absl::StrCat("made by uid ", a, " (",
                                                           bed_->account(kA).name(), ")")))
      << own.reason();
  EXPECT_EQ(critical_for("127.0.0.1", kPortB, absl::StrCat("proxy listener of uid ", bed_->uid(kB)))
                .action(),
            "block");
  EXPECT_EQ(critical_for("::1", kPortB, absl::StrCat("proxy listener of uid ", bed_->uid(kB))).action(),
            "block");
  // Nothing was ever logged under B for these.
  for (const leash::v1::DecisionRecord& r : bed_->Records()) {
    EXPECT_FALSE(r.uid() == bed_->uid(kB) && r.severity() == "critical") << r.reason();
  }
}

// A peer with no leash rules at all (root, another local service) connecting to a listener
// directly is refused and logged under the UID that made it, never as that subject's own egress
// (docs/ARCHITECTURE.md, rule N6). The kernel (sock_diag) names the connecting socket's owner;
// the record carries it, never the subject.
TEST_F(ProxyNetnsTest, APeerWithNoLeashRulesConnectingDirectlyIsLoggedUnderItsOwnAccount) {
  absl::StatusOr<std::unique_ptr<TestAccount>> other =
      TestAccount::Create(absl::StrCat("lpxo-", getpid()));
  ASSERT_TRUE(other.ok()) << other.status();
  const std::vector<std::string> argv = {bed_->Helper("probe"), absl::StrCat("127.0.0.1:", kPortA),
                                         "http", "allowed-a.test"};
  absl::StatusOr<RunResult> by_other = bed_->ns().Run((*other)->AsUser(argv));
  ASSERT_TRUE(by_other.ok()) << by_other.status();
  EXPECT_EQ(absl::StripTrailingAsciiWhitespace(by_other->out), "RESET");
  EXPECT_EQ(Probe(kRoot, absl::StrCat("[::1]:", kPortA), "http", "allowed-a.test"), "RESET");
  EXPECT_EQ(Probe(kRoot, absl::StrCat("127.0.0.1:", kPortA), "http", "allowed-a.test"), "RESET");

  auto direct_by = [&](uint32_t uid, const std::string& ip) {
    return Record([&](const leash::v1::DecisionRecord& r) {
      return r.uid() == uid && r.subject().ip() == ip && r.subject().port() == kPortA &&
             absl::StrContains(r.reason(), "this listener's own address");
    });
  };
  const leash::v1::DecisionRecord by_account = direct_by((*other)->uid(), "127.0.0.1");
  EXPECT_EQ(by_account.action(), "block");
  EXPECT_EQ(by_account.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(by_account.reason(),
                                absl::StrCat("made by uid ", (*other)->uid(), " (",
                                             (*other)->name(), ")")))
      << by_account.reason();
  EXPECT_TRUE(absl::StrContains(by_account.reason(),
                                absl::StrCat("aimed at the proxy listener of uid ", bed_->uid(kA))))
      << by_account.reason();
  // Each line names the account beside the uid (rule L5), root's 0 written, not left out.
  EXPECT_EQ(by_account.account(), (*other)->name());
  for (const std::string ip : {"127.0.0.1", "::1"}) {
    const leash::v1::DecisionRecord by_root = direct_by(0, ip);
    EXPECT_EQ(by_root.severity(), "critical") << ip;
    EXPECT_TRUE(absl::StrContains(by_root.reason(), "made by uid 0 (root)")) << by_root.reason();
    EXPECT_TRUE(by_root.has_uid()) << ip << ": the line has no uid";
    EXPECT_EQ(by_root.account(), "root") << ip;
  }
  // None of the three was recorded as A's.
  const std::vector<leash::v1::DecisionRecord> records = bed_->Records();
  for (size_t i = records_before_; i < records.size(); ++i) {
    EXPECT_NE(records[i].uid(), bed_->uid(kA)) << records[i].reason();
  }
}

// An allowed connection goes on to its real destination: when that connection
// fails, the agent sees a reset, and the log says what happened under the allow's own ref.
// Real upstreams in the namespace: a port nobody listens on, a server that resets mid-stream,
// a blackholed address (nftables drops its packets; the proxy runs with a 2 s connect
// timeout) and an address with no route.
TEST_F(ProxyNetnsTest, AnAllowedConnectionTheUpstreamFailsHasAnOutcomeRecordUnderItsRef) {
  struct Case {
    std::string target;  // where the agent aims
    std::string name;    // the allowed name it sends
    std::string outcome;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"192.0.2.11:81", "allowed-a.test", "refused", "192.0.2.11:81 connect: Connection refused"},
      {"192.0.2.12:82", "reset.allowed-a.test", "reset", "the upstream 192.0.2.12:82 failed mid-stream"},
      {"192.0.2.11:80", "blackholed.allowed-a.test", "timed_out",
       "192.0.2.99:80 no answer within 2s"},
      {"192.0.2.11:80", "unreachable.allowed-a.test", "unreachable",
       "198.51.100.7:80 connect: No route to host"},
  };
  const uint32_t a = bed_->uid(kA);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string seen = Probe(kA, c.target, "http", c.name);
    // The reset server greets before it resets; every other case is a reset before a byte.
    if (c.outcome != "reset") {
      EXPECT_EQ(seen, "RESET");
    }
    const uint32_t port = static_cast<uint32_t>(std::stoi(c.target.substr(c.target.find(':') + 1)));
    const leash::v1::DecisionRecord allow = Record([&](const leash::v1::DecisionRecord& r) {
      return r.uid() == a && r.subject().domain() == c.name && r.subject().port() == port &&
             r.action() == "allow";
    });
    ASSERT_EQ(allow.ref().size(), 8u);
    const leash::v1::DecisionRecord outcome = Record([&](const leash::v1::DecisionRecord& r) {
      return r.ref() == allow.ref() && r.action() == "outcome";
    });
    EXPECT_EQ(outcome.outcome(), c.outcome);
    EXPECT_EQ(outcome.uid(), a);
    EXPECT_EQ(outcome.subject().domain(), c.name);
    EXPECT_TRUE(absl::StrContains(outcome.reason(), c.fragment)) << outcome.reason();
  }
}

TEST_F(ProxyNetnsTest, LoopbackToALocalServicePassesButNotInTheProxyRange) {
  const int reserved_before = Server("127.0.0.1:18500").accepted();
  EXPECT_EQ(Probe(kA, "127.0.0.1:9000", "http", "localhost"), "LINE SERVER 127.0.0.1:9000");
  EXPECT_EQ(Probe(kA, "127.0.0.1:18500", "http", "localhost"), "RESET");
  EXPECT_EQ(Server("127.0.0.1:18500").accepted(), reserved_before);
  const leash::v1::DecisionRecord record = Record([&](const leash::v1::DecisionRecord& r) {
    return r.uid() == bed_->uid(kA) && r.subject().port() == 18500;
  });
  EXPECT_EQ(record.action(), "block");
  // The exempt local service was never seen by the proxy.
  for (const leash::v1::DecisionRecord& r : bed_->Records()) EXPECT_NE(r.subject().port(), 9000u);
}

TEST_F(ProxyNetnsTest, AnAccountWithNoPolicyGetsNothingThrough) {
  EXPECT_EQ(Probe(kC, "192.0.2.11:80", "http", "allowed-a.test"), "RESET");
  EXPECT_EQ(Probe(kC, "192.0.2.11:443", "tls", "allowed-a.test"), "RESET");
  EXPECT_EQ(Probe(kC, "[2001:db8::11]:443", "tls", "allowed-b.test"), "RESET");
  const leash::v1::DecisionRecord record = Record([&](const leash::v1::DecisionRecord& r) {
    return r.uid() == bed_->uid(kC) && r.subject().ip() == "2001:db8::11";
  });
  EXPECT_EQ(record.action(), "block");
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(record.reason(), "profile lpx-missing is missing")) << record.reason();
}

TEST_F(ProxyNetnsTest, APolicyChangeOverPolicyStreamTakesEffectInPlace) {
  const pid_t pid = bed_->proxy_pid();
  EXPECT_EQ(Probe(kB, "192.0.2.11:80", "http", "allowed-a.test"), "RESET");
  ASSERT_TRUE(bed_->PublishAndWait({bed_->Subject(
                  kB, R"pb(network {
                             mode: MODE_WHITELIST
                             allow { entries: "allowed-a.test" entries: "allowed-b.test" }
                           })pb")})
                  .ok());
  EXPECT_TRUE(ReachedRealHost(Probe(kB, "192.0.2.11:80", "http", "allowed-a.test"), 80));
  EXPECT_EQ(bed_->proxy_pid(), pid);
  // A subject whose port is taken: the ack names it, and its old listener keeps refusing.
  absl::StatusOr<uint64_t> version = bed_->PublishAndWait({[&] {
    leash::v1::SubjectPolicy moved = bed_->Subject(kC, kPolicyA);
    moved.set_port(9000);  // the local service holds 127.0.0.1:9000
    return moved;
  }()});
  ASSERT_TRUE(version.ok()) << version.status();
  const policystream::SidecarState state = bed_->ProxyState();
  ASSERT_EQ(state.failed_uids.size(), 1u);
  EXPECT_EQ(state.failed_uids[0], bed_->uid(kC));
  EXPECT_TRUE(absl::StrContains(state.last_ack_error, "127.0.0.1:9000")) << state.last_ack_error;
  // Put both back.
  ASSERT_TRUE(bed_->PublishAndWait({bed_->Subject(kB, kPolicyB),
                                    bed_->NoPolicySubject(kC, "profile lpx-missing is missing")})
                  .ok());
}

// DNS rebinding: allowed names (suffixes of allowed-a.test) whose addresses are the metadata
// endpoint, a private host, loopback and an address of this host's own interface. Each is
// refused with its reason under the agent's UID, naming the entry that would allow it; with
// those entries the same names reach those addresses.
TEST_F(ProxyNetnsTest, ANameLeadingToAGuardedAddressIsRefusedUnlessAnIpEntryNamesIt) {
  struct Case {
    std::string name;
    std::string target;  // where the agent aims: allowed by no entry, so the name decides
    uint32_t port;
    std::string reached;
    std::string reason;
    std::string entry;       // the one the refusal names
    std::string allow_with;  // the entry the second half adds (that one, or a wider network)
  };
  const std::vector<Case> cases = {
      {"metadata.allowed-a.test", "192.0.2.12:80", 80, "169.254.169.254:80",
       "169.254.169.254 is the cloud metadata address", "169.254.169.254/32", "169.254.169.254/32"},
      {"private.allowed-a.test", "192.0.2.12:80", 80, "10.20.30.40:80",
       "10.20.30.40 is in private 10.0.0.0/8", "10.20.30.40/32", "10.0.0.0/8"},
      {"loopback.allowed-a.test", "192.0.2.12:9000", 9000, "127.0.0.1:9000",
       "127.0.0.1 is in loopback 127.0.0.0/8", "127.0.0.1/32", "127.0.0.1"},
      {"own.allowed-a.test", "192.0.2.12:80", 80, "192.0.2.10:80",
       "192.0.2.10 is an address of this host's own interfaces", "192.0.2.10/32",
       "192.0.2.10/32"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Probe(kA, c.target, "http", c.name), "RESET") << c.name;
    const leash::v1::DecisionRecord record = RecordFor(kA, c.name, c.port);
    EXPECT_EQ(record.action(), "block") << c.name;
    EXPECT_EQ(record.uid(), bed_->uid(kA));
    EXPECT_TRUE(absl::StrContains(record.reason(), c.reason)) << record.reason();
    EXPECT_TRUE(absl::StrContains(record.reason(), "leash net allow " + c.entry)) << record.reason();
  }
  // An address this host gains while the proxy runs is its own from the next decision on.
  ASSERT_TRUE(bed_->RunAsRoot({"ip", "addr", "add", "203.0.113.50/32", "dev", "v0"}).ok());
  EXPECT_EQ(Probe(kA, "192.0.2.12:80", "http", "late.allowed-a.test"), "RESET");
  EXPECT_TRUE(absl::StrContains(RecordFor(kA, "late.allowed-a.test", 80).reason(),
                                "203.0.113.50 is an address of this host's own interfaces"))
      << RecordFor(kA, "late.allowed-a.test", 80).reason();
  ASSERT_TRUE(bed_->RunAsRoot({"ip", "addr", "del", "203.0.113.50/32", "dev", "v0"}).ok());

  // The entries the refusals named (a network holding the address, or the bare address, does
  // as well).
  std::string allow = "entries: \"allowed-a.test\"";
  for (const Case& c : cases) absl::StrAppend(&allow, " entries: \"", c.allow_with, "\"");
  ASSERT_TRUE(bed_->PublishAndWait(
                      {bed_->Subject(kA, absl::StrCat("network { mode: MODE_WHITELIST allow { ",
                                                      allow, " } }"))})
                  .ok());
  for (const Case& c : cases) {
    EXPECT_EQ(Probe(kA, c.target, "http", c.name), "LINE SERVER " + c.reached) << c.name;
    const leash::v1::DecisionRecord record = Record([&](const leash::v1::DecisionRecord& r) {
      return r.uid() == bed_->uid(kA) && r.subject().domain() == c.name && r.action() == "allow";
    });
    EXPECT_TRUE(absl::StrContains(record.reason(), "connecting to " + c.reached)) << record.reason();
  }
  ASSERT_TRUE(bed_->PublishAndWait({bed_->Subject(kA, kPolicyA)}).ok());
}

// "This host" is what the kernel routes locally: an allowed name leading to an address this
// host holds only through a `local` route to lo (AnyIP, no interface carries it), IPv4 and
// IPv6, with a service on the wildcard that would answer there, is refused under the agent's
// UID with the route named; the exact IP entry the refusal names allows it.
TEST_F(ProxyNetnsTest, ANameLeadingToALocallyRoutedAddressIsRefused) {
  struct Case {
    std::string name;
    std::string target;  // where the agent aims: allowed by no entry, so the name decides
    uint16_t port;
    std::string address;
    std::string entry;
    std::string reached;
  };
  const std::vector<Case> cases = {
      {"anyip.allowed-a.test", absl::StrCat("192.0.2.12:", kWildcardPortV4), kWildcardPortV4,
       "192.0.2.225", "192.0.2.225/32", absl::StrCat("0.0.0.0:", kWildcardPortV4)},
      {"anyip6.allowed-a.test", absl::StrCat("[2001:db8::12]:", kWildcardPortV6), kWildcardPortV6,
       "2001:db8:ab::5", "2001:db8:ab::5/128", absl::StrCat("[::]:", kWildcardPortV6)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int accepted_before = Server(c.reached).accepted();
    EXPECT_EQ(Probe(kA, c.target, "http", c.name), "RESET");
    const leash::v1::DecisionRecord record = RecordFor(kA, c.name, c.port);
    EXPECT_EQ(record.action(), "block");
    EXPECT_EQ(record.uid(), bed_->uid(kA));
    EXPECT_TRUE(absl::StrContains(
        record.reason(), c.address + " is routed to this host (the kernel's route for it is local)"))
        << record.reason();
    EXPECT_TRUE(absl::StrContains(record.reason(), "leash net allow " + c.entry)) << record.reason();
    EXPECT_EQ(Server(c.reached).accepted(), accepted_before);
  }
  std::string allow = "entries: \"allowed-a.test\"";
  for (const Case& c : cases) absl::StrAppend(&allow, " entries: \"", c.entry, "\"");
  ASSERT_TRUE(bed_->PublishAndWait(
                      {bed_->Subject(kA, absl::StrCat("network { mode: MODE_WHITELIST allow { ",
                                                      allow, " } }"))})
                  .ok());
  for (const Case& c : cases) {
    EXPECT_EQ(Probe(kA, c.target, "http", c.name), "LINE SERVER " + c.reached) << c.name;
  }
  ASSERT_TRUE(bed_->PublishAndWait({bed_->Subject(kA, kPolicyA)}).ok());
}

}  // namespace
}  // namespace leash::testing
