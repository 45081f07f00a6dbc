// The listener manager and the whole decision path, for real on loopback sockets, with only the
// kernel's original-destination lookup faked (the redirect itself is tested in test/proxy/ in a
// network namespace). Upstreams are real TCP servers on 127.0.0.x that greet with their own
// address, so a test sees exactly where a connection went.
#include "proxy/listener_manager.h"
#include "proxy/host_addresses.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "proxy/dns_message.h"
#include "proxy/testing/client_hello_builder.h"
#include "proxy/testing/dns_wire.h"
#include "proxy/testing/fake_original_dst.h"
#include "proxy/testing/fake_route_lookup.h"
#include "proxy/testing/fake_socket_owner.h"
#include "proxy/testing/loop_thread.h"
#include "proxy/testing/recording_sink.h"
#include "proxy/testing/upstream_server.h"

namespace leash::proxy {
namespace {

using policystream::SubjectEntry;
using policystream::SubjectMap;
using policystream::SubjectMapPtr;

constexpr uint32_t kUidA = 61001;
constexpr uint32_t kUidB = 61002;

engine::IpAddress Ip(const std::string& text) { return *engine::ParseIpAddress(text); }
SocketAddress Addr(const std::string& ip, uint16_t port) { return SocketAddress{Ip(ip), port}; }


SocketAddress LocalAddress(int fd) { return LocalAddressOf(fd).value(); }

using Upstream = testing::UpstreamServer;

// What reading a client socket came to.
struct Reply {
  std::string line;     // up to and without '\n'
  bool reset = false;   // ECONNRESET
  bool eof = false;     // orderly close before a full line
};

Reply ReadLine(int fd) {
  Reply reply;
  char c;
  while (true) {
    const ssize_t n = recv(fd, &c, 1, 0);
    if (n == 1) {
      if (c == '\n') return reply;
      reply.line.push_back(c);
      continue;
    }
    if (n == 0) {
      reply.eof = true;
      return reply;
    }
    if (errno == EINTR) continue;
    reply.reset = errno == ECONNRESET;
    if (!reply.reset) reply.line = absl::StrCat("recv error: ", strerror(errno));
    return reply;
  }
}

std::string Http(const std::string& host) {
  return absl::StrCat("GET / HTTP/1.1\r\nHost: ", host, "\r\n\r\n");
}

std::string Tls(const std::string& sni, bool ech = false) {
  testing::ClientHelloSpec spec;
  spec.sni = sni;
  spec.ech = ech;
  return testing::BuildClientHello(spec);
}

class ListenerManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResolverOptions resolver_options;
    resolver_options.threads = 2;
    resolver_options.lookup = [this](const std::string& name) { return Lookup(name); };
    resolver_ = std::make_unique<ThreadPoolResolver>(thread_.loop(), resolver_options);
    manager_ = std::make_unique<ListenerManager>(thread_.loop(), &fake_, &owners_, resolver_.get(), &sink_,
                                                 Options());
  }
  static ProxyOptions Options() {
    ProxyOptions options;
    options.allow_port_zero = true;
    // The upstreams here stand on loopback, where the destination guard lets no name lead; it
    // is on in the tests that say so (and in destination_guard_test, test/proxy).
    options.guard_name_destinations = false;
    options.peek_timeout = absl::Milliseconds(200);
    options.connect_timeout = absl::Seconds(3);
    return options;
  }
  // A manager with other options in place of the one SetUp made (before any Apply).
  void RestartWith(const ProxyOptions& options) {
    manager_->Shutdown();
    manager_ = std::make_unique<ListenerManager>(thread_.loop(), &fake_, &owners_, resolver_.get(), &sink_,
                                                 options);
  }
  void TearDown() override {
    if (!release_slow_.HasBeenNotified()) release_slow_.Notify();
    manager_->Shutdown();
    manager_.reset();
    resolver_.reset();
  }

  ResolveResult Lookup(const std::string& name) {
    {
      absl::MutexLock lock(&mu_);
      looked_up_.push_back(name);
    }
    if (name == "slow.test") release_slow_.WaitForNotification();
    ResolveResult result;
    absl::MutexLock lock(&mu_);
    auto it = dns_.find(name);
    if (it == dns_.end()) {
      result.status = absl::NotFoundError(absl::StrCat("no address for ", name));
    } else {
      result.addresses = it->second;
    }
    return result;
  }
  void SetDns(const std::string& name, std::vector<std::string> ips) {
    absl::MutexLock lock(&mu_);
    for (const std::string& ip : ips) dns_[name].push_back(Ip(ip));
  }
  std::vector<std::string> looked_up() {
    absl::MutexLock lock(&mu_);
    return looked_up_;
  }

  static policystream::SubjectEntry Subject(uint32_t uid, const std::string& config_text, uint16_t port = 0) {
    policystream::SubjectEntry entry;
    entry.uid = uid;
    entry.account = absl::StrCat("lpx-", uid);
    entry.port = port;
    leash::v1::Config config;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(config_text, &config)) << config_text;
    entry.policy = std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
    return entry;
  }
  static policystream::SubjectEntry NoPolicy(uint32_t uid, const std::string& reason) {
    policystream::SubjectEntry entry;
    entry.uid = uid;
    entry.no_policy_reason = reason;
    return entry;
  }
  static policystream::SubjectMapPtr Map(const std::vector<policystream::SubjectEntry>& entries) {
    auto map = std::make_shared<policystream::SubjectMap>();
    for (const policystream::SubjectEntry& entry : entries) (*map)[entry.uid] = entry;
    return map;
  }

  leash::v1::PolicyAck Apply(const std::vector<policystream::SubjectEntry>& entries, uint64_t version = 1) {
    return manager_->Apply(Map(entries), version);
  }

  SocketAddress Listener(uint32_t uid, engine::IpAddress::Family family = engine::IpAddress::Family::kV4) {
    for (const SocketAddress& a : manager_->ListenerAddresses(uid)) {
      if (a.ip.family == family) return a;
    }
    ADD_FAILURE() << "no listener for uid " << uid;
    return SocketAddress{};
  }

  // Connects to `listener` from a client socket bound first, so `before_connect` can tell a
  // fake about the client's address before the proxy accepts it.
  static int ConnectFrom(const SocketAddress& listener,
                         const std::function<void(const SocketAddress& client)>& before_connect) {
    const int fd = socket(Family(listener), SOCK_STREAM | SOCK_CLOEXEC, 0);
    SocketAddress local{listener.ip, 0};
    sockaddr_storage storage;
    socklen_t length = ToSockaddr(local, &storage);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&storage), length), 0);
    before_connect(LocalAddress(fd));
    length = ToSockaddr(listener, &storage);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&storage), length), 0) << strerror(errno);
    timeval timeout{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    return fd;
  }
  // Connects to `listener` as a client whose original destination reads as `original`
  // (nullopt: not redirected, the fake reports the listener's own address).
  int Connect(const SocketAddress& listener, std::optional<SocketAddress> original) {
    return ConnectFrom(listener, [&](const SocketAddress& client) {
      if (original) fake_.Set(client, *original);
    });
  }
  // Connects to `listener` without a redirect, from a socket the owner lookup reports as
  // `owner`'s (nullopt: it finds nobody).
  int ConnectDirectly(const SocketAddress& listener, std::optional<SocketOwner> owner) {
    return ConnectFrom(listener, [&](const SocketAddress& client) {
      if (owner) owners_.Set(client, *owner);
    });
  }
  static void Send(int fd, const std::string& bytes) {
    ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  // Sends `first` and reads a line. A refusal may reset the connection before the client sends
  // anything (refusals that consult no policy happen at accept); then the send reports it.
  static Reply SendAndRead(int fd, const std::string& first) {
    if (!first.empty() && send(fd, first.data(), first.size(), MSG_NOSIGNAL) < 0) {
      Reply reply;
      reply.reset = errno == ECONNRESET;
      if (!reply.reset) reply.line = absl::StrCat("send error: ", strerror(errno));
      return reply;
    }
    return ReadLine(fd);
  }

  // Sends `first` on a connection with original destination `original` and returns what came back.
  Reply Exchange(uint32_t uid, const SocketAddress& original, const std::string& first) {
    const int fd = Connect(Listener(uid), original);
    Reply reply = SendAndRead(fd, first);
    close(fd);
    return reply;
  }

  leash::v1::DecisionRecord NthRecord(size_t n) {
    std::vector<leash::v1::DecisionRecord> records = sink_.WaitForCount(n + 1, absl::Seconds(5));
    if (records.size() <= n) {
      ADD_FAILURE() << "only " << records.size() << " decision records";
      return {};
    }
    return records[n];
  }

  testing::LoopThread thread_;
  testing::FakeOriginalDst fake_;
  testing::FakeSocketOwner owners_;
  testing::RecordingSink sink_;
  std::unique_ptr<ThreadPoolResolver> resolver_;
  std::unique_ptr<ListenerManager> manager_;
  absl::Notification release_slow_;
  absl::Mutex mu_;
  std::map<std::string, std::vector<engine::IpAddress>> dns_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> looked_up_ ABSL_GUARDED_BY(mu_);
};

constexpr char kAllowAllowedTest[] =
    R"pb(network { mode: MODE_WHITELIST allow { entries: "allowed.test" } })pb";

TEST_F(ListenerManagerTest, ApplyOpensAListenerPerUidAndAcksTheVersion) {
  const leash::v1::PolicyAck ack =
      Apply({Subject(kUidA, kAllowAllowedTest), Subject(kUidB, kAllowAllowedTest)}, 7);
  EXPECT_EQ(ack.version(), 7u);
  EXPECT_EQ(ack.failed_uids_size(), 0);
  EXPECT_EQ(ack.error(), "");
  EXPECT_EQ(Listener(kUidA).ip, Ip("127.0.0.1"));
  EXPECT_EQ(Listener(kUidA, engine::IpAddress::Family::kV6).ip, Ip("::1"));
  EXPECT_NE(Listener(kUidA).port, Listener(kUidB).port);
}

TEST_F(ListenerManagerTest, AListenerThatWillNotBindIsNamedInTheAck) {
  Upstream squatter(Addr("127.0.0.1", 0));
  ASSERT_TRUE(squatter.ok());
  const leash::v1::PolicyAck ack =
      Apply({Subject(kUidA, kAllowAllowedTest, squatter.address().port), Subject(kUidB, kAllowAllowedTest)}, 3);
  ASSERT_EQ(ack.failed_uids_size(), 1);
  EXPECT_EQ(ack.failed_uids(0), kUidA);
  EXPECT_TRUE(absl::StrContains(ack.error(), absl::StrCat("uid ", kUidA, " (lpx-", kUidA, ")")))
      << ack.error();
  EXPECT_TRUE(absl::StrContains(ack.error(), absl::StrCat("cannot listen on 127.0.0.1:",
                                                          squatter.address().port)))
      << ack.error();
  EXPECT_TRUE(absl::StrContains(ack.error(), "in use")) << ack.error();
  // The half that did bind (::1) refuses: a failed UID is denied.
  const SocketAddress v6 = Listener(kUidA, engine::IpAddress::Family::kV6);
  Upstream upstream(Addr("::1", 0));
  const int fd = Connect(v6, upstream.address());
  EXPECT_TRUE(SendAndRead(fd, Http("allowed.test")).reset);
  close(fd);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(record.reason(), "not fully in force")) << record.reason();
}

TEST_F(ListenerManagerTest, HttpHostAllowedReachesOnlyTheAddressTheProxyResolved) {
  Upstream resolved(Addr("127.0.0.2", 0));
  Upstream foreign(Addr("127.0.0.3", resolved.address().port));
  ASSERT_TRUE(resolved.ok() && foreign.ok());
  SetDns("allowed.test", {"127.0.0.2"});
  Apply({Subject(kUidA, kAllowAllowedTest)});
  // The agent aims at 127.0.0.3 while naming an allowed host: it reaches 127.0.0.2.
  const Reply reply = Exchange(kUidA, foreign.address(), Http("allowed.test"));
  EXPECT_EQ(reply.line, absl::StrCat("SERVER ", FormatSocketAddress(resolved.address())));
  EXPECT_EQ(foreign.accepted(), 0);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.action(), "allow");
  EXPECT_EQ(record.uid(), kUidA);
  EXPECT_EQ(record.surface(), "network");
  EXPECT_EQ(record.subject().domain(), "allowed.test");
  EXPECT_EQ(record.subject().ip(), "127.0.0.3");
  EXPECT_EQ(record.subject().port(), resolved.address().port);
  EXPECT_EQ(record.ref().size(), 8u);
  EXPECT_TRUE(absl::StrContains(record.reason(), "resolved by the proxy")) << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(), "HTTP Host header")) << record.reason();
}

TEST_F(ListenerManagerTest, AnAllowedNameResolvingToThisHostNeverReachesTheReservedRange) {
  // An allowed name whose addresses are this host's (a sinkhole 0.0.0.0, localhost, an
  // /etc/hosts line) must not carry the agent, through the proxy's own root connection, to
  // another subject's listener on a reserved port.
  SetDns("allowed.test", {"127.0.0.1", "0.0.0.0", "::1"});
  Apply({Subject(kUidA, kAllowAllowedTest)});
  const Reply reply = Exchange(kUidA, Addr("192.0.2.10", 18005), Tls("allowed.test"));
  EXPECT_TRUE(reply.reset) << reply.line;
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.action(), "block");
  EXPECT_EQ(record.uid(), kUidA);
  EXPECT_TRUE(absl::StrContains(record.reason(), "every address allowed.test resolved to is "
                                                 "blocked (127.0.0.1 port 18005 is in Leash's "
                                                 "reserved loopback port range 18000-18999)"))
      << record.reason();
}

// The destination guard on: a name leads to no loopback (or other guarded) address on its own,
// the refusal names the address and the entry, and an IP entry naming the address allows it.
TEST_F(ListenerManagerTest, TheGuardKeepsANameOffLoopbackUnlessAnIpEntryNamesTheAddress) {
  ProxyOptions options = Options();
  options.guard_name_destinations = true;
  absl::StatusOr<std::unique_ptr<HostAddresses>> host = HostAddresses::Open();
  ASSERT_TRUE(host.ok()) << host.status();
  options.host_addresses = std::move(*host);
  RestartWith(options);
  Upstream local(Addr("127.0.0.2", 0));
  SetDns("rebind.test", {"127.0.0.2", "::ffff:10.1.2.3"});
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "rebind.test" } })pb")});
  // The agent aims elsewhere and names the allowed host; the name resolves only to guarded
  // addresses.
  EXPECT_TRUE(Exchange(kUidA, Addr("192.0.2.10", local.address().port), Http("rebind.test")).reset);
  EXPECT_EQ(local.accepted(), 0);
  const leash::v1::DecisionRecord refused = NthRecord(0);
  EXPECT_EQ(refused.action(), "block");
  EXPECT_EQ(refused.uid(), kUidA);
  EXPECT_TRUE(absl::StrContains(
      refused.reason(),
      "every address rebind.test resolved to is blocked (127.0.0.2 is in loopback 127.0.0.0/8, "
      "where a name never leads on its own; an IP allow entry of this subject allows it: add "
      "'127.0.0.2/32' to its network.allow (leash net allow 127.0.0.2/32)), (::ffff:10.1.2.3 "
      "carries 10.1.2.3, in private 10.0.0.0/8"))
      << refused.reason();
  // With the entry the refusal named, the name leads there.
  Apply({Subject(kUidA, R"pb(network {
                               mode: MODE_WHITELIST
                               allow { entries: "rebind.test" entries: "127.0.0.2/32" }
                             })pb")},
        2);
  EXPECT_EQ(Exchange(kUidA, Addr("192.0.2.10", local.address().port), Http("rebind.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(local.address())));
  const leash::v1::DecisionRecord allowed = NthRecord(1);
  EXPECT_EQ(allowed.action(), "allow");
  EXPECT_TRUE(absl::StrContains(allowed.reason(), "connecting to 127.0.0.2:")) << allowed.reason();
  EXPECT_TRUE(absl::StrContains(allowed.reason(), "not to (::ffff:10.1.2.3 carries 10.1.2.3"))
      << allowed.reason();
}

// Whether an address is this host's cannot be told without the list: a name-decided connection
// is refused under fail_mode: closed; under open the ranges still hold.
TEST_F(ListenerManagerTest, TheGuardWithoutThisHostsAddressesFailsClosed) {
  ProxyOptions options = Options();
  options.guard_name_destinations = true;
  options.host_addresses = nullptr;
  RestartWith(options);
  Upstream local(Addr("127.0.0.2", 0));
  SetDns("rebind.test", {"127.0.0.2"});
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "rebind.test" } })pb"),
         Subject(kUidB, R"pb(fail_mode: "open"
                            network { mode: MODE_WHITELIST allow { entries: "rebind.test" } })pb")});
  EXPECT_TRUE(Exchange(kUidA, Addr("192.0.2.10", local.address().port), Http("rebind.test")).reset);
  EXPECT_TRUE(absl::StrContains(NthRecord(0).reason(),
                                "127.0.0.2 cannot be checked against this host's own addresses "
                                "(no reader of this host's addresses)"))
      << NthRecord(0).reason();
  EXPECT_TRUE(Exchange(kUidB, Addr("192.0.2.10", local.address().port), Http("rebind.test")).reset);
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(), "127.0.0.2 is in loopback 127.0.0.0/8"))
      << NthRecord(1).reason();
  EXPECT_EQ(local.accepted(), 0);
}

// The guard asks the kernel's routes of an address the ranges and the interface list pass: an
// address routed locally (an AnyIP range, on no interface) is refused with the route named; a
// lookup that fails refuses under fail_mode: closed, and under open the connection goes on.
TEST_F(ListenerManagerTest, TheGuardRefusesAnAddressRoutedLocallyAndFailsClosedWithoutARoute) {
  ProxyOptions options = Options();
  options.guard_name_destinations = true;
  absl::StatusOr<std::unique_ptr<HostAddresses>> host = HostAddresses::Open();
  ASSERT_TRUE(host.ok()) << host.status();
  options.host_addresses = std::move(*host);
  auto routes = std::make_shared<testing::FakeRouteLookup>();
  routes->AddRoute(*engine::ParseIpAddress("198.51.100.0"), 24, RouteKind::kLocal);
  routes->FailFor(*engine::ParseIpAddress("203.0.113.9"),
                  absl::UnavailableError("RTM_GETROUTE: Invalid argument"));
  options.routes = routes;
  RestartWith(options);
  SetDns("anyip.test", {"198.51.100.7"});
  SetDns("unknown.test", {"203.0.113.9"});
  constexpr char kAllow[] =
      R"pb(network { mode: MODE_WHITELIST allow { entries: "anyip.test" entries: "unknown.test" } })pb";
  Apply({Subject(kUidA, kAllow), Subject(kUidB, absl::StrCat(R"pb(fail_mode: "open" )pb", kAllow))});
  EXPECT_TRUE(Exchange(kUidA, Addr("192.0.2.10", 8080), Http("anyip.test")).reset);
  EXPECT_TRUE(absl::StrContains(
      NthRecord(0).reason(),
      "198.51.100.7 is routed to this host (the kernel's route for it is local), where a name "
      "never leads on its own; an IP allow entry of this subject allows it: add "
      "'198.51.100.7/32' to its network.allow (leash net allow 198.51.100.7/32)"))
      << NthRecord(0).reason();
  EXPECT_EQ(NthRecord(0).action(), "block");
  EXPECT_TRUE(Exchange(kUidA, Addr("192.0.2.10", 8080), Http("unknown.test")).reset);
  EXPECT_EQ(NthRecord(1).action(), "block");
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(),
                                "203.0.113.9 cannot be checked against this host's routes "
                                "(203.0.113.9: RTM_GETROUTE: Invalid argument)"))
      << NthRecord(1).reason();
  // Under fail_mode: open the failed lookup is skipped: the connection is allowed and goes to
  // the resolved address (which does not answer here).
  Exchange(kUidB, Addr("192.0.2.10", 8080), Http("unknown.test"));
  EXPECT_EQ(NthRecord(2).action(), "allow") << NthRecord(2).reason();
  EXPECT_TRUE(absl::StrContains(NthRecord(2).reason(), "connecting to 203.0.113.9:8080"))
      << NthRecord(2).reason();
}

TEST_F(ListenerManagerTest, TlsSniAllowedAndBlocked) {
  Upstream resolved(Addr("127.0.0.2", 0));
  SetDns("allowed.test", {"127.0.0.2"});
  Apply({Subject(kUidA, kAllowAllowedTest)});
  EXPECT_EQ(Exchange(kUidA, resolved.address(), Tls("allowed.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(resolved.address())));
  const Reply blocked = Exchange(kUidA, resolved.address(), Tls("evil.test"));
  EXPECT_TRUE(blocked.reset) << blocked.line;
  const leash::v1::DecisionRecord record = NthRecord(1);
  EXPECT_EQ(record.action(), "block");
  EXPECT_EQ(record.severity(), "");
  EXPECT_EQ(record.subject().domain(), "evil.test");
  EXPECT_TRUE(absl::StrContains(record.reason(), "not in allow list")) << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(), "TLS SNI")) << record.reason();
  EXPECT_EQ(resolved.accepted(), 1);
}

TEST_F(ListenerManagerTest, SniCaseAndTrailingDotAreNormalizedBeforeDecidingAndResolving) {
  Upstream resolved(Addr("127.0.0.2", 0));
  SetDns("allowed.test", {"127.0.0.2"});
  Apply({Subject(kUidA, kAllowAllowedTest)});
  EXPECT_EQ(Exchange(kUidA, resolved.address(), Tls("ALLOWED.Test.")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(resolved.address())));
  EXPECT_EQ(looked_up(), std::vector<std::string>{"allowed.test"});
  EXPECT_EQ(NthRecord(0).subject().domain(), "allowed.test");
}

TEST_F(ListenerManagerTest, IpLiteralSniIsDecidedOnTheDestinationAddress) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, kAllowAllowedTest),
         Subject(kUidB, R"pb(network { mode: MODE_WHITELIST allow { entries: "127.0.0.4" } })pb")});
  // Naming an address in the SNI unlocks nothing a name entry allows.
  EXPECT_TRUE(Exchange(kUidA, target.address(), Tls("127.0.0.4")).reset);
  // An address entry allows it, and the connection goes to the original destination.
  EXPECT_EQ(Exchange(kUidB, target.address(), Tls("127.0.0.4")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(target.address())));
  EXPECT_TRUE(looked_up().empty());
}

TEST_F(ListenerManagerTest, NoSniAndEchOnlyAreDecidedOnTheAddress) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network {
                               mode: MODE_WHITELIST
                               allow { entries: "allowed.test" entries: "127.0.0.4" }
                             })pb")});
  EXPECT_EQ(Exchange(kUidA, target.address(), Tls("")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(target.address())));
  EXPECT_TRUE(absl::StrContains(NthRecord(0).reason(), "without SNI")) << NthRecord(0).reason();
  // An ECH hello's outer SNI is not trusted as the name, even an allowed one.
  Upstream elsewhere(Addr("127.0.0.5", 0));
  EXPECT_TRUE(Exchange(kUidA, elsewhere.address(), Tls("allowed.test", /*ech=*/true)).reset);
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(), "ECH")) << NthRecord(1).reason();
}

TEST_F(ListenerManagerTest, AClientThatSendsNothingIsDecidedOnTheAddressAfterTheTimeout) {
  Upstream banner(Addr("127.0.0.4", 0));  // speaks first
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "127.0.0.4" } })pb")});
  EXPECT_EQ(Exchange(kUidA, banner.address(), "").line,
            absl::StrCat("SERVER ", FormatSocketAddress(banner.address())));
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.action(), "allow");
  EXPECT_TRUE(absl::StrContains(record.reason(), "nothing sent within 200ms")) << record.reason();
}

// A name the agent's own bytes make unreadable (a cut hello, two SNIs, two Host headers) is
// not an internal error: under fail_mode: closed it is refused, and under open it is decided on
// the address like a connection that carries no name, so it can never reach a destination the
// address alone would not. (It used to be allowed anywhere under open: two Host headers took
// a subject whose whitelist was empty to any address.)
TEST_F(ListenerManagerTest, UnreadableHelloIsRefusedWhenClosedAndDecidedOnTheAddressWhenOpen) {
  Upstream target(Addr("127.0.0.4", 0));
  Upstream elsewhere(Addr("127.0.0.5", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb"),
         Subject(kUidB, R"pb(fail_mode: "open"
                            network { mode: MODE_WHITELIST allow { entries: "127.0.0.4" } })pb")});
  const std::string broken = Tls("a.example").substr(0, 40);
  // Closed (the default): a connection whose name cannot be read is refused, even in blacklist.
  {
    const int fd = Connect(Listener(kUidA), target.address());
    Send(fd, broken);
    shutdown(fd, SHUT_WR);  // no more bytes: the hello is final and incomplete
    EXPECT_TRUE(ReadLine(fd).reset);
    close(fd);
  }
  EXPECT_TRUE(absl::StrContains(NthRecord(0).reason(), "unreadable")) << NthRecord(0).reason();
  EXPECT_EQ(NthRecord(0).action(), "block");
  // Open: decided on the address. The whitelisted one is reached...
  {
    const int fd = Connect(Listener(kUidB), target.address());
    Send(fd, broken);
    shutdown(fd, SHUT_WR);
    EXPECT_EQ(ReadLine(fd).line, absl::StrCat("SERVER ", FormatSocketAddress(target.address())));
    close(fd);
  }
  EXPECT_EQ(NthRecord(1).action(), "allow");
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(), "unreadable")) << NthRecord(1).reason();
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(), "decided on the address"))
      << NthRecord(1).reason();
  // ...and one the whitelist does not name is not, whatever the bytes.
  {
    const int fd = Connect(Listener(kUidB), elsewhere.address());
    Send(fd, "GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n");
    EXPECT_TRUE(ReadLine(fd).reset);
    close(fd);
  }
  EXPECT_EQ(NthRecord(2).action(), "block");
  EXPECT_TRUE(absl::StrContains(NthRecord(2).reason(), "unreadable")) << NthRecord(2).reason();
}

TEST_F(ListenerManagerTest, ADirectConnectionIsLoggedUnderTheAccountThatMadeItAsCritical) {
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const SocketAddress listener = Listener(kUidA);
  // Root, which no nftables rule redirects, straight at A's listener.
  const int fd = ConnectDirectly(listener, SocketOwner{0, "root"});
  EXPECT_TRUE(SendAndRead(fd, Http("anything.test")).reset);
  close(fd);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.uid(), 0u);
  EXPECT_EQ(record.action(), "block");
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_EQ(record.subject().ip(), "127.0.0.1");
  EXPECT_EQ(record.subject().port(), listener.port);
  EXPECT_TRUE(absl::StrContains(record.reason(), "this listener's own address")) << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(), "made by uid 0 (root)")) << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(),
                                absl::StrCat("aimed at the proxy listener of uid ", kUidA, " (lpx-",
                                             kUidA, ")")))
      << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(), "without consulting a policy")) << record.reason();
}

TEST_F(ListenerManagerTest, ADirectConnectionWhoseOwnerIsUnknownIsNeverAttributedToTheSubject) {
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = ConnectDirectly(Listener(kUidA), std::nullopt);
  EXPECT_TRUE(SendAndRead(fd, Http("anything.test")).reset);
  close(fd);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.uid(), engine::kUnknownUid);
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(record.reason(), "made by an unknown owner (no socket of this host"))
      << record.reason();
}

TEST_F(ListenerManagerTest, ADirectConnectionByAnAccountWithNoNameGivesItsUid) {
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = ConnectDirectly(Listener(kUidA), SocketOwner{231072, ""});
  EXPECT_TRUE(SendAndRead(fd, Http("anything.test")).reset);
  close(fd);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.uid(), 231072u);
  EXPECT_TRUE(absl::StrContains(record.reason(), "made by uid 231072 (no account has this uid)"))
      << record.reason();
}

TEST_F(ListenerManagerTest, ARedirectedConnectionNeverAsksWhoOwnsTheSocket) {
  Upstream target(Addr("127.0.0.4", 0));
  ASSERT_TRUE(target.ok());
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb"),
         Subject(kUidB, R"pb(network { mode: MODE_BLACKLIST })pb")});
  EXPECT_EQ(Exchange(kUidA, target.address(), Http("x.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(target.address())));
  // Nor does one agent's attempt at another's port: it was redirected, so the listener's UID is
  // the attempting one.
  EXPECT_TRUE(Exchange(kUidA, Listener(kUidB), Http("x.test")).reset);
  EXPECT_EQ(NthRecord(1).uid(), kUidA);
  EXPECT_EQ(owners_.lookups(), 0);
}

TEST_F(ListenerManagerTest, AimingAtAnotherSubjectsListenerIsRefusedUnderTheAttemptingUid) {
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb"),
         Subject(kUidB, R"pb(network { mode: MODE_BLACKLIST })pb")});
  // A's traffic to B's port was redirected to A's own listener.
  EXPECT_TRUE(Exchange(kUidA, Listener(kUidB), Http("x.test")).reset);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.uid(), kUidA);
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(record.reason(), absl::StrCat("proxy listener of uid ", kUidB)))
      << record.reason();
}

TEST_F(ListenerManagerTest, LoopbackInTheReservedRangeIsRefusedEvenWithNoListenerThere) {
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  // Blacklist mode would allow it on policy; the reserved range is refused before any policy.
  for (const char* address : {"127.0.0.1", "127.9.9.9", "::1"}) {
    EXPECT_TRUE(Exchange(kUidA, Addr(address, 18777), Http("x.test")).reset) << address;
  }
  for (int i = 0; i < 3; ++i) {
    const leash::v1::DecisionRecord record = NthRecord(i);
    EXPECT_EQ(record.uid(), kUidA);
    EXPECT_EQ(record.severity(), "critical");
    EXPECT_EQ(record.subject().port(), 18777u);
    EXPECT_TRUE(absl::StrContains(record.reason(), "reserved loopback port range 18000-18999"))
        << record.reason();
  }
}

TEST_F(ListenerManagerTest, AnUnreadableOriginalDestinationIsRefused) {
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage storage;
  socklen_t length = ToSockaddr(Addr("127.0.0.1", 0), &storage);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&storage), length), 0);
  fake_.SetError(LocalAddress(fd), absl::NotFoundError("getsockopt SO_ORIGINAL_DST: No such file"));
  length = ToSockaddr(Listener(kUidA), &storage);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&storage), length), 0);
  EXPECT_TRUE(SendAndRead(fd, Http("x.test")).reset);
  close(fd);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.severity(), "critical");
  // Not shown to be redirected, so not shown to be A's: logged as a connection of unknown owner.
  EXPECT_EQ(record.uid(), engine::kUnknownUid);
  EXPECT_TRUE(absl::StrContains(record.reason(), "original destination unreadable")) << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(), "unknown owner")) << record.reason();
  EXPECT_EQ(record.subject().ip(), "");
}

TEST_F(ListenerManagerTest, ASubjectWithNoPolicyGetsNothingThrough) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({NoPolicy(kUidA, "profile web-research is missing")});
  EXPECT_TRUE(Exchange(kUidA, target.address(), Http("x.test")).reset);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.uid(), kUidA);
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(record.reason(), "profile web-research is missing")) << record.reason();
  EXPECT_EQ(target.accepted(), 0);
}

TEST_F(ListenerManagerTest, AUidGoneFromTheMapKeepsItsListenerAndRefuses) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")}, 1);
  const SocketAddress before = Listener(kUidA);
  Apply({Subject(kUidB, R"pb(network { mode: MODE_BLACKLIST })pb")}, 2);
  EXPECT_EQ(Listener(kUidA), before);
  EXPECT_TRUE(Exchange(kUidA, target.address(), Http("x.test")).reset);
  EXPECT_TRUE(absl::StrContains(NthRecord(0).reason(), "not in the policy map")) << NthRecord(0).reason();
}

TEST_F(ListenerManagerTest, ANewMapLeavesListenersAndOpenConnectionsUntouched) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "127.0.0.4" } })pb")}, 1);
  const SocketAddress before = Listener(kUidA);
  const int open_fd = Connect(before, target.address());
  Send(open_fd, Http("x.test"));
  ASSERT_EQ(ReadLine(open_fd).line, absl::StrCat("SERVER ", FormatSocketAddress(target.address())));
  // The policy changes to deny that address, and another subject arrives.
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "127.0.0.9" } })pb"),
         Subject(kUidB, kAllowAllowedTest)},
        2);
  EXPECT_EQ(Listener(kUidA), before);
  // The open connection still flows (its request came back echoed).
  EXPECT_EQ(ReadLine(open_fd).line, "GET / HTTP/1.1\r");
  Send(open_fd, "ping\n");
  std::string rest;
  for (int i = 0; i < 3; ++i) rest = ReadLine(open_fd).line;  // Host, blank, ping
  EXPECT_EQ(rest, "ping");
  close(open_fd);
  // A new connection is judged by the new policy.
  EXPECT_TRUE(Exchange(kUidA, target.address(), Http("x.test")).reset);
}

TEST_F(ListenerManagerTest, ASlowNameStallsOnlyItsOwnConnection) {
  Upstream slow_target(Addr("127.0.0.2", 0));
  Upstream fast_target(Addr("127.0.0.4", 0));
  SetDns("slow.test", {"127.0.0.2"});
  Apply({Subject(kUidA, R"pb(network {
                               mode: MODE_WHITELIST
                               allow { entries: "slow.test" entries: "127.0.0.4" }
                             })pb")});
  const int slow_fd = Connect(Listener(kUidA), slow_target.address());
  Send(slow_fd, Http("slow.test"));
  // While slow.test is still resolving, other connections come and go.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Exchange(kUidA, fast_target.address(), Http("fast.test")).line,
              absl::StrCat("SERVER ", FormatSocketAddress(fast_target.address())));
  }
  EXPECT_EQ(slow_target.accepted(), 0);
  release_slow_.Notify();
  EXPECT_EQ(ReadLine(slow_fd).line, absl::StrCat("SERVER ", FormatSocketAddress(slow_target.address())));
  close(slow_fd);
}

TEST_F(ListenerManagerTest, OneSubjectAtItsConnectionLimitDoesNotStopAnother) {
  ProxyOptions options = Options();
  options.max_connections_per_subject = 2;
  RestartWith(options);
  Upstream slow_target(Addr("127.0.0.2", 0));
  Upstream other_target(Addr("127.0.0.4", 0));
  SetDns("slow.test", {"127.0.0.2"});
  SetDns("allowed.test", {"127.0.0.4"});
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "slow.test" } })pb"),
         Subject(kUidB, kAllowAllowedTest)});
  // Two of A's connections held while slow.test resolves.
  const int first = Connect(Listener(kUidA), slow_target.address());
  const int second = Connect(Listener(kUidA), slow_target.address());
  Send(first, Http("slow.test"));
  Send(second, Http("slow.test"));
  ASSERT_TRUE(leash::testing::WaitFor([&] { return looked_up().size() >= 1; }, absl::Seconds(5)));
  // A third of A's is refused and logged under A; B's still goes through.
  EXPECT_TRUE(Exchange(kUidA, slow_target.address(), Http("slow.test")).reset);
  const leash::v1::DecisionRecord refused = NthRecord(0);
  EXPECT_EQ(refused.uid(), kUidA);
  EXPECT_EQ(refused.severity(), "critical");
  EXPECT_TRUE(absl::StrContains(refused.reason(), "already holds its maximum of 2 connections"))
      << refused.reason();
  EXPECT_EQ(Exchange(kUidB, other_target.address(), Http("allowed.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(other_target.address())));
  release_slow_.Notify();
  EXPECT_EQ(ReadLine(first).line,
            absl::StrCat("SERVER ", FormatSocketAddress(slow_target.address())));
  close(first);
  close(second);
  // Once A's connections end, A may connect again.
  EXPECT_TRUE(leash::testing::WaitFor(
      [&] {
        return Exchange(kUidA, slow_target.address(), Http("slow.test")).line ==
               absl::StrCat("SERVER ", FormatSocketAddress(slow_target.address()));
      },
      absl::Seconds(5)));
}

TEST_F(ListenerManagerTest, ANameThatDoesNotResolveIsBlocked) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "gone.test" } })pb")});
  EXPECT_TRUE(Exchange(kUidA, target.address(), Http("gone.test")).reset);
  const leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.action(), "block");
  EXPECT_TRUE(absl::StrContains(record.reason(), "no address for gone.test")) << record.reason();
  EXPECT_EQ(target.accepted(), 0);
}

TEST_F(ListenerManagerTest, AResolvedAddressOnTheDenyListIsNotUsed) {
  Upstream denied(Addr("127.0.0.2", 0));
  Upstream allowed(Addr("127.0.0.4", denied.address().port));
  SetDns("allowed.test", {"127.0.0.2", "127.0.0.4"});
  Apply({Subject(kUidA, R"pb(network {
                               mode: MODE_WHITELIST
                               allow { entries: "allowed.test" }
                               deny { entries: "127.0.0.2" }
                             })pb")});
  // (The agent's own destination is elsewhere: aiming at the denied address itself is
  // blocked before any name is resolved.)
  EXPECT_EQ(Exchange(kUidA, Addr("127.0.0.3", denied.address().port), Http("allowed.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(allowed.address())));
  EXPECT_EQ(denied.accepted(), 0);
  EXPECT_TRUE(Exchange(kUidA, denied.address(), Http("allowed.test")).reset);
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(), "matches deny entry '127.0.0.2'"))
      << NthRecord(1).reason();
}

// Audit: a connection the policy would block goes where the agent aimed it, and its record is
// the block with enforced: false; when a name is allowed and only the policy refuses every
// address it resolved to, those addresses take it. What keeps the boundary does not change: the
// reserved loopback range is refused before any policy is asked.
TEST_F(ListenerManagerTest, UnderAuditABlockedConnectionGoesThroughAndIsLoggedNotEnforced) {
  Upstream aimed(Addr("127.0.0.3", 0));
  Upstream denied(Addr("127.0.0.2", 0));
  ASSERT_TRUE(aimed.ok() && denied.ok());
  SetDns("allowed.test", {"127.0.0.2"});
  Apply({Subject(kUidA, R"pb(network {
                               mode: MODE_WHITELIST
                               allow { entries: "allowed.test" }
                               deny { entries: "127.0.0.2" }
                               audit: true
                             })pb"),
         Subject(kUidB, R"pb(network {
                               mode: MODE_WHITELIST
                               allow { entries: "allowed.test" }
                             })pb")});
  EXPECT_EQ(Exchange(kUidA, aimed.address(), Http("blocked.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(aimed.address())));
  leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.action(), "block");
  EXPECT_TRUE(record.has_enforced());
  EXPECT_FALSE(record.enforced());
  EXPECT_EQ(record.subject().domain(), "blocked.test");
  EXPECT_TRUE(absl::StrContains(record.reason(), "not in allow list")) << record.reason();

  EXPECT_EQ(Exchange(kUidA, Addr("127.0.0.4", denied.address().port), Http("allowed.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(denied.address())));
  record = NthRecord(1);
  EXPECT_EQ(record.action(), "block");
  EXPECT_FALSE(record.enforced());
  EXPECT_TRUE(absl::StrContains(record.reason(), "matches deny entry '127.0.0.2'"))
      << record.reason();

  EXPECT_TRUE(Exchange(kUidA, Addr("127.0.0.1", 18005), Http("allowed.test")).reset);
  record = NthRecord(2);
  EXPECT_EQ(record.severity(), "critical");
  EXPECT_FALSE(record.has_enforced());
  EXPECT_EQ(manager_->counters().audited.load(), 2u);

  // The would-be blocks `leash status` shows are the subject's own: another subject's block,
  // enforced, is not one, nor is the boundary's refusal above.
  EXPECT_TRUE(Exchange(kUidB, aimed.address(), Http("blocked.test")).reset);
  EXPECT_EQ(NthRecord(3).action(), "block");
  EXPECT_FALSE(NthRecord(3).has_enforced());
  EXPECT_EQ(manager_->counters().would_be_blocks.Count(kUidA, leash::v1::SURFACE_NETWORK), 2u);
  EXPECT_EQ(manager_->counters().would_be_blocks.Count(kUidB, leash::v1::SURFACE_NETWORK), 0u);
  google::protobuf::RepeatedPtrField<leash::v1::WouldBeBlocks> beat;
  manager_->counters().would_be_blocks.Fill(&beat);
  ASSERT_EQ(beat.size(), 1);
  EXPECT_EQ(beat[0].uid(), kUidA);
  EXPECT_EQ(beat[0].count(), 2u);
}

// An allowed connection the upstream fails is reset for the client, and the log says so: the
// allow record, then an outcome record under the same ref (never "allow" alone).
void ExpectAllowThenOutcome(const leash::v1::DecisionRecord& allow,
                            const leash::v1::DecisionRecord& outcome, const std::string& kind,
                            const std::string& fragment) {
  EXPECT_EQ(allow.action(), "allow");
  EXPECT_EQ(outcome.action(), "outcome");
  EXPECT_EQ(outcome.outcome(), kind);
  EXPECT_EQ(outcome.ref(), allow.ref());
  EXPECT_EQ(outcome.uid(), allow.uid());
  EXPECT_EQ(outcome.surface(), "network");
  EXPECT_EQ(outcome.subject().ip(), allow.subject().ip());
  EXPECT_EQ(outcome.subject().port(), allow.subject().port());
  EXPECT_TRUE(absl::StrContains(outcome.reason(), fragment)) << outcome.reason();
  EXPECT_TRUE(absl::StrContains(outcome.reason(), "the client was reset")) << outcome.reason();
}

TEST_F(ListenerManagerTest, AnAllowedConnectionTheUpstreamRefusesHasARefusedOutcome) {
  // A port nobody listens on: bound for a moment to learn a free one, then closed.
  const int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage storage;
  socklen_t length = ToSockaddr(Addr("127.0.0.5", 0), &storage);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&storage), length), 0);
  const SocketAddress closed_port = LocalAddress(probe);
  close(probe);
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  EXPECT_TRUE(Exchange(kUidA, closed_port, Http("x.test")).reset);
  ExpectAllowThenOutcome(NthRecord(0), NthRecord(1), "refused",
                         absl::StrCat(FormatSocketAddress(closed_port), " connect: Connection refused"));
}

TEST_F(ListenerManagerTest, AnAllowedConnectionTheUpstreamResetsMidStreamHasAResetOutcome) {
  Upstream resetting(Addr("127.0.0.6", 0), Upstream::Behaviour::kResetAfterFirstBytes);
  ASSERT_TRUE(resetting.ok());
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = Connect(Listener(kUidA), resetting.address());
  // The greeting arrives (the connection was up), then the server resets it.
  EXPECT_EQ(SendAndRead(fd, Http("x.test")).line, resetting.Greeting());
  EXPECT_TRUE(ReadLine(fd).reset);
  close(fd);
  ExpectAllowThenOutcome(NthRecord(0), NthRecord(1), "reset",
                         absl::StrCat("the upstream ", FormatSocketAddress(resetting.address()),
                                      " failed mid-stream"));
}

TEST_F(ListenerManagerTest, AnAllowedConnectionTheUpstreamNeverAnswersHasATimedOutOutcome) {
  ProxyOptions options = Options();
  options.connect_timeout = absl::Milliseconds(300);
  RestartWith(options);
  // A listener whose queue is full drops every further SYN: a connect to it never completes.
  const int full = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage storage;
  socklen_t length = ToSockaddr(Addr("127.0.0.7", 0), &storage);
  ASSERT_EQ(bind(full, reinterpret_cast<sockaddr*>(&storage), length), 0);
  ASSERT_EQ(listen(full, 0), 0);
  const SocketAddress silent = LocalAddress(full);
  length = ToSockaddr(silent, &storage);
  std::vector<int> fillers;
  for (int i = 0; i < 2; ++i) {
    fillers.push_back(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    connect(fillers.back(), reinterpret_cast<sockaddr*>(&storage), length);
  }
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  EXPECT_TRUE(Exchange(kUidA, silent, Http("x.test")).reset);
  ExpectAllowThenOutcome(NthRecord(0), NthRecord(1), "timed_out", "no answer within 300ms");
  for (int fd : fillers) close(fd);
  close(full);
}

TEST_F(ListenerManagerTest, AConnectionOpenWhenTheProxyStopsHasAProxyStoppedOutcome) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = Connect(Listener(kUidA), target.address());
  EXPECT_EQ(SendAndRead(fd, Http("x.test")).line, target.Greeting());
  manager_->Shutdown();
  // Past the echo of the request, the reset.
  Reply rest;
  do {
    rest = ReadLine(fd);
  } while (!rest.reset && !rest.eof && !absl::StartsWith(rest.line, "recv error"));
  EXPECT_TRUE(rest.reset) << rest.line;
  close(fd);
  ExpectAllowThenOutcome(NthRecord(0), NthRecord(1), "proxy_stopped", "leash-proxy stopped");
}

TEST_F(ListenerManagerTest, AnAllowedConnectionThatEndsNormallyHasNoOutcomeRecord) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = Connect(Listener(kUidA), target.address());
  EXPECT_EQ(SendAndRead(fd, Http("x.test")).line, target.Greeting());
  shutdown(fd, SHUT_WR);
  // The echo of the request, then the server's orderly close.
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
  }
  EXPECT_EQ(n, 0) << strerror(errno);
  close(fd);
  EXPECT_TRUE(leash::testing::WaitFor(
      [&] { return manager_->counters().active.load() == 0; }, absl::Seconds(5)));
  const std::vector<leash::v1::DecisionRecord> records = sink_.WaitForCount(1, absl::Seconds(5));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].action(), "allow");
  EXPECT_EQ(manager_->counters().outcomes.load(), 0u);
}

TEST_F(ListenerManagerTest, HalfCloseIsCarriedAcrossAndEveryByteArrives) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_BLACKLIST })pb")});
  const int fd = Connect(Listener(kUidA), target.address());
  std::string payload = Http("x.test");
  payload += std::string(3 << 20, 'z');  // more than a pipe holds
  std::thread writer([&] {
    send(fd, payload.data(), payload.size(), MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);  // the upstream sees EOF, finishes its echo, then closes
  });
  std::string received;
  char buffer[65536];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      EXPECT_EQ(n, 0) << "ended with " << strerror(errno);
      break;
    }
    received.append(buffer, n);
  }
  writer.join();
  close(fd);
  const std::string greeting = absl::StrCat("SERVER ", FormatSocketAddress(target.address()), "\n");
  ASSERT_EQ(received.size(), greeting.size() + payload.size());
  EXPECT_EQ(received.substr(0, greeting.size()), greeting);
  EXPECT_TRUE(received.substr(greeting.size()) == payload);
}

TEST_F(ListenerManagerTest, EveryConnectionIsDecidedOnceOnOneLoop) {
  Upstream target(Addr("127.0.0.4", 0));
  Apply({Subject(kUidA, R"pb(network { mode: MODE_WHITELIST allow { entries: "127.0.0.4" } })pb")});
  constexpr int kConnections = 200;
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    fds.push_back(Connect(Listener(kUidA), target.address()));
    Send(fds.back(), i % 2 ? Http("h.test") : Tls("s.test"));
  }
  for (int fd : fds) {
    EXPECT_EQ(ReadLine(fd).line, absl::StrCat("SERVER ", FormatSocketAddress(target.address())));
  }
  for (int fd : fds) close(fd);
  EXPECT_EQ(sink_.WaitForCount(kConnections, absl::Seconds(5)).size(), static_cast<size_t>(kConnections));
  EXPECT_EQ(manager_->counters().decided.load(), static_cast<uint64_t>(kConnections));
}


// leashd's sockets, as ProxyPortHold binds them: TCP on 127.0.0.1:P and [::1]:P, not listening,
// no reuse options. The test plays leashd and keeps them open across managers.
class HeldPortsTest : public ListenerManagerTest {
 protected:
  void SetUp() override {
    ListenerManagerTest::SetUp();
    for (int i = 0; i < 2; ++i) {
      // TCP and UDP (the DNS filter's), on 127.0.0.1 and ::1, all on one port.
      std::vector<int> four;
      for (int tries = 0; tries < 50 && four.size() < 4; ++tries) {
        for (int fd : four) close(fd);
        four = {BindHeld(Addr("127.0.0.1", 0))};
        const uint16_t port = LocalAddress(four[0]).port;
        for (auto [ip, type] : {std::pair{"::1", SOCK_STREAM}, std::pair{"127.0.0.1", SOCK_DGRAM},
                                std::pair{"::1", SOCK_DGRAM}}) {
          const int fd = BindHeld(Addr(ip, port), type);
          if (fd < 0) break;
          four.push_back(fd);
        }
      }
      ASSERT_EQ(four.size(), 4u);
      ports_.push_back(LocalAddress(four[0]).port);
      fds_.insert(fds_.end(), four.begin(), four.end());
    }
    absl::StatusOr<HeldPortSockets> held = AdoptHeldPortSockets(fds_, "127.0.0.1", "::1");
    ASSERT_TRUE(held.ok()) << held.status();
    held_ = std::make_shared<const HeldPortSockets>(*held);
    RestartWith(HeldOptions());
  }
  void TearDown() override {
    ListenerManagerTest::TearDown();
    for (int fd : fds_) close(fd);
  }
  ProxyOptions HeldOptions() const {
    ProxyOptions options = Options();
    options.allow_port_zero = false;
    options.held_ports = held_;
    return options;
  }
  static int BindHeld(const SocketAddress& address, int type = SOCK_STREAM) {
    const int fd = socket(Family(address), type | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (Family(address) == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    sockaddr_storage storage;
    const socklen_t length = ToSockaddr(address, &storage);
    if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // connect() to 127.0.0.1:port: 0 or the errno.
  static int ConnectError(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage storage;
    const socklen_t length = ToSockaddr(Addr("127.0.0.1", port), &storage);
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&storage), length);
    const int error = rc == 0 ? 0 : errno;
    close(fd);
    return error;
  }
  std::vector<uint16_t> ports_;
  std::vector<int> fds_;
  std::shared_ptr<const HeldPortSockets> held_;
};

TEST_F(HeldPortsTest, AListenerIsLeashdsSocketListenedAndAPortLeashdDoesNotHoldFails) {
  Upstream resolved(Addr("127.0.0.2", 0));
  ASSERT_TRUE(resolved.ok());
  SetDns("allowed.test", {"127.0.0.2"});
  // A port leashd does not hold (one the test just found free): never bound by the proxy.
  const int probe = BindHeld(Addr("127.0.0.1", 0));
  const uint16_t not_held = LocalAddress(probe).port;
  close(probe);
  const leash::v1::PolicyAck ack =
      Apply({Subject(kUidA, kAllowAllowedTest, ports_[0]),
             Subject(kUidB, kAllowAllowedTest, not_held)},
            4);
  ASSERT_EQ(ack.failed_uids_size(), 1);
  EXPECT_EQ(ack.failed_uids(0), kUidB);
  EXPECT_TRUE(absl::StrContains(
      ack.error(), absl::StrCat("leashd holds no TCP socket for 127.0.0.1:", not_held)))
      << ack.error();
  EXPECT_TRUE(absl::StrContains(ack.error(), absl::StrCat("[::1]:", not_held))) << ack.error();
  EXPECT_TRUE(absl::StrContains(
      ack.error(), absl::StrCat("DNS filter: leashd holds no UDP socket for 127.0.0.1:", not_held)))
      << ack.error();
  EXPECT_TRUE(manager_->ListenerAddresses(kUidB).empty());
  EXPECT_EQ(ConnectError(not_held), ECONNREFUSED);
  // A's listener is leashd's socket, listening, and judges connections as any listener does.
  EXPECT_EQ(Listener(kUidA), Addr("127.0.0.1", ports_[0]));
  EXPECT_EQ(Listener(kUidA, engine::IpAddress::Family::kV6), Addr("::1", ports_[0]));
  int listening = 0;
  socklen_t size = sizeof(listening);
  ASSERT_EQ(getsockopt(fds_[0], SOL_SOCKET, SO_ACCEPTCONN, &listening, &size), 0);
  EXPECT_EQ(listening, 1);
  EXPECT_EQ(Exchange(kUidA, Addr("127.0.0.9", resolved.address().port), Http("allowed.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(resolved.address())));
  // The port nobody was handed is still refused, and still leashd's.
  EXPECT_EQ(ConnectError(ports_[1]), ECONNREFUSED);
}

TEST_F(HeldPortsTest, AConnectionMadeWhileNoProxyRunsIsServedByTheNextOne) {
  Upstream resolved(Addr("127.0.0.2", 0));
  ASSERT_TRUE(resolved.ok());
  SetDns("allowed.test", {"127.0.0.2"});
  ASSERT_EQ(Apply({Subject(kUidA, kAllowAllowedTest, ports_[0])}).failed_uids_size(), 0);
  // The proxy goes (a crash closes its copies; leashd's keep listening).
  RestartWith(HeldOptions());
  const int queued =
      Connect(Addr("127.0.0.1", ports_[0]), Addr("127.0.0.9", resolved.address().port));
  Send(queued, Http("allowed.test"));
  // The next proxy gets the same sockets and the current map.
  ASSERT_EQ(Apply({Subject(kUidA, kAllowAllowedTest, ports_[0])}).failed_uids_size(), 0);
  EXPECT_EQ(ReadLine(queued).line,
            absl::StrCat("SERVER ", FormatSocketAddress(resolved.address())));
  close(queued);
}

TEST_F(HeldPortsTest, APortMovedAwayRefusesWhatStillReachesItAndStaysHeld) {
  Upstream resolved(Addr("127.0.0.2", 0));
  ASSERT_TRUE(resolved.ok());
  SetDns("allowed.test", {"127.0.0.2"});
  ASSERT_EQ(Apply({Subject(kUidA, kAllowAllowedTest, ports_[0])}, 1).failed_uids_size(), 0);
  ASSERT_EQ(Apply({Subject(kUidA, kAllowAllowedTest, ports_[1])}, 2).failed_uids_size(), 0);
  EXPECT_EQ(Listener(kUidA).port, ports_[1]);
  const int old = Connect(Addr("127.0.0.1", ports_[0]), Addr("127.0.0.9", resolved.address().port));
  EXPECT_TRUE(SendAndRead(old, Http("allowed.test")).reset);
  close(old);
  EXPECT_TRUE(absl::StrContains(NthRecord(0).reason(), "was this account's and is now"))
      << NthRecord(0).reason();
  // Handed out again, the old port is a listener again.
  ASSERT_EQ(Apply({Subject(kUidA, kAllowAllowedTest, ports_[0])}, 3).failed_uids_size(), 0);
  EXPECT_EQ(Exchange(kUidA, Addr("127.0.0.9", resolved.address().port), Http("allowed.test")).line,
            absl::StrCat("SERVER ", FormatSocketAddress(resolved.address())));
  // Still bound: a wildcard bind of the other port is refused.
  const int squatter = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(squatter, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage storage;
  const socklen_t length = ToSockaddr(Addr("0.0.0.0", ports_[1]), &storage);
  EXPECT_NE(bind(squatter, reinterpret_cast<sockaddr*>(&storage), length), 0);
  EXPECT_EQ(errno, EADDRINUSE);
  close(squatter);
}

// Sends `query` to the DNS filter's UDP socket of `port` and returns the answer ("" when none
// comes within a second).
std::string AskUdp(uint16_t port, const std::string& query) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_storage storage;
  const socklen_t length = ToSockaddr(Addr("127.0.0.1", port), &storage);
  sendto(fd, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&storage), length);
  char buffer[65536];
  const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
  close(fd);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

// The DNS filter on leashd's UDP socket of the subject's port: what it refuses, it answers at
// once and never forwards (the subject has no resolvers here, so a forward would be SERVFAIL).
TEST_F(HeldPortsTest, TheDnsFilterAnswersRefusedNamesAndBadQueriesItself) {
  ASSERT_EQ(Apply({Subject(kUidA, kAllowAllowedTest, ports_[0])}).failed_uids_size(), 0);
  namespace wire = dns::testing_wire;

  const std::string exfil = wire::Query(0x4242, {{"c2VjcmV0.exfil.evil.test", dns::kTypeA}});
  absl::StatusOr<dns::Message> answer = dns::ParseMessage(AskUdp(ports_[0], exfil));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->header.id, 0x4242);
  EXPECT_EQ(answer->header.rcode(), static_cast<uint8_t>(dns::Rcode::kNxDomain));
  ASSERT_EQ(answer->questions.size(), 1u);
  EXPECT_EQ(answer->questions[0].name, "c2vjcmv0.exfil.evil.test");
  leash::v1::DecisionRecord record = NthRecord(0);
  EXPECT_EQ(record.uid(), kUidA);
  EXPECT_EQ(record.action(), "block");
  EXPECT_EQ(record.subject().domain(), "c2vjcmv0.exfil.evil.test");
  EXPECT_EQ(record.subject().port(), 53u);
  EXPECT_TRUE(absl::StrContains(record.reason(), "not in allow list (whitelist)")) << record.reason();
  EXPECT_TRUE(absl::StrContains(record.reason(), "answered NXDOMAIN, never forwarded"))
      << record.reason();

  // An allowed name riding along with a denied one is refused whole.
  answer = dns::ParseMessage(AskUdp(
      ports_[0], wire::Query(7, {{"allowed.test", dns::kTypeA}, {"x.evil.test", dns::kTypeA}})));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->header.rcode(), static_cast<uint8_t>(dns::Rcode::kFormErr));
  EXPECT_TRUE(absl::StrContains(NthRecord(1).reason(), "2 questions (allowed.test, x.evil.test)"))
      << NthRecord(1).reason();

  // 4 KiB of garbage: longer than any query.
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 131 + 7) % 256);
  answer = dns::ParseMessage(AskUdp(ports_[0], garbage));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->header.rcode(), static_cast<uint8_t>(dns::Rcode::kRefused));
  EXPECT_TRUE(absl::StrContains(NthRecord(2).reason(), "DNS query of 4096 bytes over UDP"))
      << NthRecord(2).reason();

  // A name it may resolve, with no resolver to ask: SERVFAIL, never a made-up answer.
  answer = dns::ParseMessage(AskUdp(ports_[0], wire::Query(9, {{"allowed.test", dns::kTypeA}})));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->header.rcode(), static_cast<uint8_t>(dns::Rcode::kServFail));
}

}  // namespace
}  // namespace leash::proxy
