// The inbound routing's kernel side for real, as root in a fresh network namespace: rtnetlink
// rules read back as written, a restarted leashd replaces its rules instead of duplicating
// them, a deliberate release removes every one of Leash's and puts tcp_fwmark_accept back, and
// another owner's rules (even ones shaped like Leash's) are never listed, replaced or removed.
#include "controlplane/rtnl_route_rules.h"

#include <linux/fib_rules.h>
#include <sys/socket.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "controlplane/inbound_routing.h"
#include "controlplane/testing/fake_netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"

namespace leash::controlplane {
namespace {

using ::leash::testing::NetNamespace;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

class RtnlRouteRulesTest : public leash::testing::RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    saved_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/fwmark_accept.", getpid(), ".saved");
    std::remove(saved_.c_str());
  }

  // A RouteRules of the test namespace (the socket and the sysctl belong to it for good).
  std::unique_ptr<RtnlRouteRules> Open() {
    absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
    EXPECT_TRUE(entered.ok()) << entered.status();
    absl::StatusOr<std::unique_ptr<RtnlRouteRules>> rules = RtnlRouteRules::Open();
    EXPECT_TRUE(rules.ok()) << rules.status();
    return rules.ok() ? std::move(*rules) : nullptr;
  }

  std::string IpRules(const std::string& family) {
    absl::StatusOr<std::string> out =
        leash::testing::RunOk(ns_->Exec({"ip", family, "rule", "show"}));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }
  std::string Ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<std::string> out = leash::testing::RunOk(ns_->Exec(argv));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }
  std::string Sysctl() {
    absl::StatusOr<std::string> out = leash::testing::RunOk(
        ns_->Exec({"sysctl", "-n", "net.ipv4.tcp_fwmark_accept"}));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }

  static NetfilterSubject Subject(uint32_t uid, std::vector<engine::UidRange> subordinate) {
    NetfilterSubject subject = testing::MakeSubject(uid, 18001);
    subject.subordinate_uids = std::move(subordinate);
    return subject;
  }

  std::string saved_;
};

TEST_F(RtnlRouteRulesTest, RulesReadBackAsWrittenAndTheSysctlIsTheNamespaces) {
  std::unique_ptr<RtnlRouteRules> kernel = Open();
  ASSERT_NE(kernel, nullptr);
  std::vector<RouteRule> written = FrameRouteRules();
  for (const RouteRule& rule : RefusalRouteRules(70001, {{70001, 70001}, {300000, 365535}})) {
    written.push_back(rule);
  }
  for (const RouteRule& rule : written) ASSERT_TRUE(kernel->Add(rule).ok()) << DescribeRouteRule(rule);
  // Adding the same rule again is not an error and adds nothing.
  ASSERT_TRUE(kernel->Add(written.back()).ok());
  absl::StatusOr<std::vector<RouteRule>> own = kernel->ListOwn();
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(*own, ::testing::UnorderedElementsAreArray(written));
  EXPECT_THAT(IpRules("-4"),
              HasSubstr(absl::StrCat("2:\tfrom all fwmark 0x1000000/0x1000000 uidrange "
                                     "300000-365535 lookup ", SubjectTable(70001), " proto 76")));
  EXPECT_THAT(IpRules("-4"),
              HasSubstr("3:\tfrom all fwmark 0x1000000/0x1000000 uidrange 300000-365535 lookup "
                        "70001 prohibit proto 76"));
  EXPECT_THAT(IpRules("-6"), HasSubstr("1:\tnot from all fwmark 0x1000000/0x1000000 goto 4 proto 76"));
  for (const RouteRule& rule : written) ASSERT_TRUE(kernel->Delete(rule).ok());
  ASSERT_TRUE(kernel->Delete(written.back()).ok());  // gone already: not an error
  EXPECT_THAT(kernel->ListOwn().value_or(std::vector<RouteRule>{RouteRule{}}), IsEmpty());

  absl::StatusOr<int> value = kernel->ReadFwmarkAccept();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, 0);  // a fresh namespace's default
  ASSERT_TRUE(kernel->WriteFwmarkAccept(1).ok());
  EXPECT_EQ(Sysctl(), "1\n");
}

TEST_F(RtnlRouteRulesTest, ARestartReplacesTheRulesAndADeliberateReleaseRemovesThemAll) {
  // Another owner's rules, one of them shaped exactly like a refusal of Leash's but for another
  // protocol, and one at a priority of its own.
  for (const char* family : {"-4", "-6"}) {
    for (const std::vector<std::string>& rule : std::vector<std::vector<std::string>>{
             {"priority", "2", "fwmark", "0x1000000/0x1000000", "uidrange", "70001-70001",
              "table", "70001", "prohibit", "proto", "static"},
             {"priority", "500", "uidrange", "70001-70001", "lookup", "main"}}) {
      std::vector<std::string> argv = {"ip", family, "rule", "add"};
      argv.insert(argv.end(), rule.begin(), rule.end());
      ASSERT_TRUE(leash::testing::RunOk(ns_->Exec(argv)).ok());
    }
  }
  const std::string others4 = IpRules("-4");

  std::unique_ptr<RtnlRouteRules> first_kernel = Open();
  ASSERT_NE(first_kernel, nullptr);
  {
    InboundRouting first(first_kernel.get(), saved_);
    absl::StatusOr<std::vector<std::string>> lines = first.Prepare();
    ASSERT_TRUE(lines.ok()) << lines.status();
    // The other owner's rule at priority 2 is inside Leash's block: said, not touched.
    EXPECT_THAT(*lines, SizeIs(1));
    ASSERT_TRUE(first.Apply(Subject(70001, {{300000, 365535}})).ok());
    ASSERT_TRUE(first.Apply(Subject(70002, {})).ok());
  }
  EXPECT_EQ(Sysctl(), "1\n");
  // The frame, a counted refusal and a prohibit per range and family, the hull gates.
  ASSERT_THAT(first_kernel->ListOwn().value_or(std::vector<RouteRule>{}), SizeIs(4 + 12 + 2));

  // leashd restarts (no release): the rules stayed, the new one finds and replaces its own.
  std::unique_ptr<RtnlRouteRules> second_kernel = Open();
  ASSERT_NE(second_kernel, nullptr);
  InboundRouting second(second_kernel.get(), saved_);
  ASSERT_TRUE(second.Prepare().ok());
  ASSERT_TRUE(second.Apply(Subject(70001, {{300000, 399999}})).ok());
  absl::StatusOr<std::vector<RouteRule>> own = second_kernel->ListOwn();
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(*own, SizeIs(4 + 12 + 2));
  EXPECT_THAT(IpRules("-4"), HasSubstr("uidrange 300000-399999 lookup 70001 prohibit proto 76"));
  EXPECT_THAT(IpRules("-4"), Not(HasSubstr("uidrange 300000-365535")));
  // The hull gate follows: unmarked lookups and UIDs outside every refusal skip the block.
  EXPECT_THAT(IpRules("-4"), HasSubstr("1:\tnot from all uidrange 70001-399999 goto 4 proto 76"));
  // A subject not applied yet after the restart keeps its rules until it is.
  EXPECT_THAT(IpRules("-6"), HasSubstr("uidrange 70002-70002 lookup 70002 prohibit proto 76"));

  // Under network.inbound: allow the subject has none.
  NetfilterSubject allowed = Subject(70001, {{300000, 399999}});
  allowed.inbound_allowed = true;
  ASSERT_TRUE(second.Apply(allowed).ok());
  EXPECT_THAT(IpRules("-4"), Not(HasSubstr("lookup 70001 prohibit proto 76")));
  EXPECT_THAT(IpRules("-4"), Not(HasSubstr(absl::StrCat("lookup ", SubjectTable(70001)))));
  EXPECT_EQ(Ip({"-4", "route", "show", "table", absl::StrCat(SubjectTable(70001))}), "");
  EXPECT_THAT(Ip({"-6", "route", "show", "table", absl::StrCat(SubjectTable(70002))}),
              HasSubstr("dev leash-inbound"));

  // The deliberate release: Leash's rules all gone, the host's 0 back, the others' untouched.
  ASSERT_TRUE(second.ReleaseHost().ok());
  EXPECT_THAT(second_kernel->ListOwn().value_or(std::vector<RouteRule>{RouteRule{}}), IsEmpty());
  EXPECT_EQ(Sysctl(), "0\n");
  EXPECT_EQ(IpRules("-4"), others4);
  EXPECT_FALSE(leash::testing::RunOk(ns_->Exec({"ip", "link", "show", kRefusalDevice})).ok());
  EXPECT_THAT(IpRules("-6"), HasSubstr("2:\tfrom all fwmark 0x1000000/0x1000000 uidrange "
                                       "70001-70001 lookup 70001 prohibit proto static"));
}

// The refusal device is an ifb device, up, with no IPv6 address; a subject's table holds one
// route per family out of it, tagged with the subject's UID (the IPv4 realm, the IPv6 next hop).
TEST_F(RtnlRouteRulesTest, TheRefusalDeviceAndASubjectsRoutes) {
  std::unique_ptr<RtnlRouteRules> kernel = Open();
  ASSERT_NE(kernel, nullptr);
  // Before the device there is nothing to route to.
  EXPECT_FALSE(kernel->AddRefusalRoute(AF_INET, 70001).ok());
  ASSERT_TRUE(kernel->PrepareRefusalDevice().ok());
  ASSERT_TRUE(kernel->PrepareRefusalDevice().ok());  // again: the same device
  const std::string link = Ip({"-d", "link", "show", kRefusalDevice});
  EXPECT_THAT(link, HasSubstr("ifb"));
  EXPECT_THAT(link, HasSubstr(",UP"));
  EXPECT_THAT(link, HasSubstr("addrgenmode none"));
  EXPECT_EQ(Ip({"-6", "addr", "show", "dev", kRefusalDevice}), "");
  for (int family : {AF_INET, AF_INET6}) {
    ASSERT_TRUE(kernel->AddRefusalRoute(family, 70001).ok());
    ASSERT_TRUE(kernel->AddRefusalRoute(family, 70001).ok());  // there already: not an error
  }
  const std::string table = absl::StrCat(SubjectTable(70001));
  // 70001 is 0x11171: realm 1/4465 as iproute2 prints 32 bits, ::1:1171 the address's last 32.
  EXPECT_EQ(Ip({"-4", "route", "show", "table", table}),
            "default via 192.0.0.8 dev leash-inbound proto 76 onlink realms 1/4465 \n");
  EXPECT_THAT(Ip({"-6", "route", "show", "table", table}),
              HasSubstr("default via fd6c:6561:7368::1:1171 dev leash-inbound proto 76"));
  for (int family : {AF_INET, AF_INET6}) {
    ASSERT_TRUE(kernel->DeleteRefusalRoute(family, 70001).ok());
    ASSERT_TRUE(kernel->DeleteRefusalRoute(family, 70001).ok());  // gone: not an error
  }
  EXPECT_EQ(Ip({"-4", "route", "show", "table", table}), "");
  EXPECT_EQ(Ip({"-6", "route", "show", "table", table}), "");
  ASSERT_TRUE(kernel->DeleteRefusalDevice().ok());
  ASSERT_TRUE(kernel->DeleteRefusalDevice().ok());
  EXPECT_FALSE(leash::testing::RunOk(ns_->Exec({"ip", "link", "show", kRefusalDevice})).ok());
}

// A device of that name that is not an ifb could carry what is routed there off the host:
// refused, and never deleted.
TEST_F(RtnlRouteRulesTest, ADeviceOfThatNameOfAnotherKindIsRefusedAndLeftAlone) {
  ASSERT_TRUE(leash::testing::RunOk(ns_->Exec({"ip", "link", "add", kRefusalDevice, "type",
                                               "veth", "peer", "name", "leash-peer"}))
                  .ok());
  std::unique_ptr<RtnlRouteRules> kernel = Open();
  ASSERT_NE(kernel, nullptr);
  const absl::Status prepared = kernel->PrepareRefusalDevice();
  EXPECT_TRUE(absl::IsFailedPrecondition(prepared)) << prepared;
  EXPECT_THAT(std::string(prepared.message()), HasSubstr("veth"));
  ASSERT_TRUE(kernel->DeleteRefusalDevice().ok());
  EXPECT_THAT(Ip({"-d", "link", "show", kRefusalDevice}), HasSubstr("veth"));
}

}  // namespace
}  // namespace leash::controlplane
