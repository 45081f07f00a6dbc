// InboundRouting's planning over the fake RouteRules: subjects' UID ranges -> refusal rules,
// diffs against what the kernel holds (add before delete, one subject at a time, another
// owner's rules never read as Leash's), the sysctl saved and put back, and the Netfilter that
// applies the routing with the chains. The rtnetlink implementation is tested as root in
// test/network/.
#include "controlplane/inbound_routing.h"

#include <linux/fib_rules.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controlplane/inbound_routed_netfilter.h"
#include "controlplane/testing/fake_netfilter.h"
#include "controlplane/testing/fake_route_rules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::FakeNetfilter;
using ::leash::controlplane::testing::FakeRouteRules;
using ::leash::controlplane::testing::MakeSubject;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

NetfilterSubject Subject(uint32_t uid, std::vector<engine::UidRange> subordinate = {}) {
  NetfilterSubject subject = MakeSubject(uid, 18001);
  subject.subordinate_uids = std::move(subordinate);
  return subject;
}

// Leash's prohibits (or with `priority` kRoutePriority, its counted refusals) in the fake, as
// "family first-last table" strings.
std::vector<std::string> Refusals(const FakeRouteRules& kernel,
                                  uint32_t priority = kRefusalPriority) {
  std::vector<std::string> out;
  for (const RouteRule& rule : kernel.rules) {
    if (rule.priority != priority) continue;
    out.push_back(absl::StrCat(rule.family == AF_INET6 ? "6 " : "4 ", rule.uids->first, "-",
                               rule.uids->last, " ", rule.table));
  }
  return out;
}

class InboundRoutingTest : public ::testing::Test {
 protected:
  std::string saved_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/fwmark_accept.saved");
  void SetUp() override { std::remove(saved_.c_str()); }
  FakeRouteRules kernel_;
  InboundRouting routing_{&kernel_, saved_};
};

TEST(RefusalRouteRules, PerMergedRangePerFamilyALookupOfTheSubjectsTableThenAProhibit) {
  const std::vector<RouteRule> rules =
      RefusalRouteRules(1001, {{100000, 165535}, {1001, 1001}, {165536, 200000}});
  ASSERT_EQ(rules.size(), 8u);
  EXPECT_EQ(DescribeRouteRule(rules[0]),
            "ipv4 2: fwmark 0x1000000/0x1000000 uidrange 1001-1001 lookup 2147484649 (subject "
            "1001)");
  EXPECT_EQ(DescribeRouteRule(rules[1]),
            "ipv4 3: fwmark 0x1000000/0x1000000 uidrange 1001-1001 prohibit (subject 1001)");
  EXPECT_EQ(DescribeRouteRule(rules[3]),
            "ipv4 3: fwmark 0x1000000/0x1000000 uidrange 100000-200000 prohibit (subject 1001)");
  EXPECT_EQ(rules[4].family, AF_INET6);
  EXPECT_EQ(rules[4].table, SubjectTable(1001));
  for (const RouteRule& rule : rules) EXPECT_EQ(rule.protocol, kLeashRuleProtocol);
  // Uncounted, or a UID that has no table of its own: the prohibits alone.
  EXPECT_EQ(RefusalRouteRules(1001, {{1001, 1001}}, /*counted=*/false).size(), 2u);
  const std::vector<RouteRule> high = RefusalRouteRules(0x80000001u, {{0x80000001u, 0x80000001u}});
  ASSERT_EQ(high.size(), 2u);
  EXPECT_EQ(high[0].action, FR_ACT_PROHIBIT);
}

TEST(DesiredRefusals, NoneUnderInboundAllow) {
  NetfilterSubject subject = Subject(1001, {{100000, 165535}});
  EXPECT_EQ(DesiredRefusals(subject).size(), 8u);
  subject.inbound_allowed = true;
  EXPECT_THAT(DesiredRefusals(subject), IsEmpty());
}

TEST(FrameRouteRules, TheEndBeforeTheGateThatJumpsToIt) {
  const std::vector<RouteRule> rules = FrameRouteRules();
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(DescribeRouteRule(rules[0]), "ipv4 4: nop");
  EXPECT_EQ(DescribeRouteRule(rules[1]), "ipv4 1: not fwmark 0x1000000/0x1000000 goto 4");
  EXPECT_EQ(DescribeRouteRule(rules[3]), "ipv6 1: not fwmark 0x1000000/0x1000000 goto 4");
}

TEST_F(InboundRoutingTest, PrepareSavesTheHostsSysctlSetsItAndAddsTheFrameOnce) {
  kernel_.fwmark_accept = 0;
  ASSERT_TRUE(routing_.Prepare().ok());
  EXPECT_EQ(kernel_.fwmark_accept, 1);
  EXPECT_EQ(kernel_.rules, FrameRouteRules());
  std::ifstream in(saved_);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "0");
  // A restarted leashd reads Leash's 1; the host's 0 stays saved, and nothing is duplicated.
  InboundRouting restarted(&kernel_, saved_);
  ASSERT_TRUE(restarted.Prepare().ok());
  EXPECT_EQ(kernel_.rules, FrameRouteRules());
  EXPECT_TRUE(kernel_.device);
  ASSERT_TRUE(restarted.ReleaseHost().ok());
  EXPECT_EQ(kernel_.fwmark_accept, 0);
  EXPECT_THAT(kernel_.rules, IsEmpty());
  EXPECT_FALSE(kernel_.device);
  EXPECT_FALSE(std::ifstream(saved_).good());
}

TEST_F(InboundRoutingTest, PrepareReplacesAFrameRuleOfLeashsInAnotherShape) {
  RouteRule odd = FrameRouteRules()[1];
  odd.goto_target = 7;
  kernel_.rules.push_back(odd);
  ASSERT_TRUE(routing_.Prepare().ok());
  EXPECT_EQ(kernel_.rules, FrameRouteRules());
}

TEST_F(InboundRoutingTest, PrepareWarnsOfAnotherOwnersRuleInsideLeashsBlock) {
  kernel_.other_priorities = {0, 2, 32766};
  absl::StatusOr<std::vector<std::string>> lines = routing_.Prepare();
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_THAT(lines->front(), HasSubstr("priority 2"));
}

TEST_F(InboundRoutingTest, ApplyGivesASubjectItsRangesAndAllowTakesThemAway) {
  ASSERT_TRUE(routing_.Prepare().ok());
  ASSERT_TRUE(routing_.Apply(Subject(1001, {{100000, 165535}})).ok());
  ASSERT_TRUE(routing_.Apply(Subject(1002)).ok());
  EXPECT_THAT(Refusals(kernel_),
              UnorderedElementsAre("4 1001-1001 1001", "4 100000-165535 1001", "6 1001-1001 1001",
                                   "6 100000-165535 1001", "4 1002-1002 1002",
                                   "6 1002-1002 1002"));
  const std::string t1001 = absl::StrCat(SubjectTable(1001));
  const std::string t1002 = absl::StrCat(SubjectTable(1002));
  EXPECT_THAT(Refusals(kernel_, kRoutePriority),
              UnorderedElementsAre("4 1001-1001 " + t1001, "4 100000-165535 " + t1001,
                                   "6 1001-1001 " + t1001, "6 100000-165535 " + t1001,
                                   "4 1002-1002 " + t1002, "6 1002-1002 " + t1002));
  EXPECT_THAT(kernel_.routes, UnorderedElementsAre(std::pair<int, uint32_t>{AF_INET, 1001},
                                                   std::pair<int, uint32_t>{AF_INET6, 1001},
                                                   std::pair<int, uint32_t>{AF_INET, 1002},
                                                   std::pair<int, uint32_t>{AF_INET6, 1002}));
  NetfilterSubject allowed = Subject(1001, {{100000, 165535}});
  allowed.inbound_allowed = true;
  kernel_.log.clear();
  ASSERT_TRUE(routing_.Apply(allowed).ok());
  EXPECT_THAT(Refusals(kernel_), UnorderedElementsAre("4 1002-1002 1002", "6 1002-1002 1002"));
  EXPECT_THAT(Refusals(kernel_, kRoutePriority),
              UnorderedElementsAre("4 1002-1002 " + t1002, "6 1002-1002 " + t1002));
  // The table's route goes after the last rule that looked there.
  const auto route_gone = std::find(kernel_.log.begin(), kernel_.log.end(), "delete route 4 1001");
  ASSERT_NE(route_gone, kernel_.log.end());
  EXPECT_EQ(*(route_gone + 1), "delete route 6 1001");
  for (auto it = route_gone; it != kernel_.log.end(); ++it) {
    EXPECT_THAT(*it, ::testing::Not(HasSubstr(" 2: fwmark")));
  }
  EXPECT_EQ(std::count_if(kernel_.log.begin(), route_gone,
                          [](const std::string& line) { return absl::StrContains(line, " 2: fwmark"); }),
            4);
  // Applying the same subject twice changes no rule (its route is re-added if it went).
  kernel_.log.clear();
  ASSERT_TRUE(routing_.Apply(Subject(1002)).ok());
  EXPECT_THAT(kernel_.log, ElementsAre("add route 4 1002", "add route 6 1002"));
}

// The route comes before the rules that look up its table.
TEST_F(InboundRoutingTest, TheTablesRouteIsAddedBeforeTheRules) {
  ASSERT_TRUE(routing_.Prepare().ok());
  kernel_.log.clear();
  ASSERT_TRUE(routing_.Apply(Subject(1001)).ok());
  ASSERT_GE(kernel_.log.size(), 3u);
  EXPECT_THAT(kernel_.log[0], "add route 4 1001");
  EXPECT_THAT(kernel_.log[1], "add route 6 1001");
  EXPECT_THAT(kernel_.log[2], HasSubstr("add ipv4 2: fwmark"));
}

// A device that went after Prepare is made again by the next apply that needs it.
TEST_F(InboundRoutingTest, AnApplyMakesAGoneDeviceAgain) {
  ASSERT_TRUE(routing_.Prepare().ok());
  kernel_.device = false;
  ASSERT_TRUE(routing_.Apply(Subject(1001)).ok());
  EXPECT_TRUE(kernel_.device);
  EXPECT_EQ(kernel_.routes.size(), 2u);
  // One that cannot be made fails the apply (the reconcile reports it and tries again); the
  // prohibits it already had stay.
  kernel_.device = false;
  kernel_.fail_device = absl::PermissionDeniedError("EPERM");
  EXPECT_FALSE(routing_.Apply(Subject(1002)).ok());
  EXPECT_THAT(Refusals(kernel_), UnorderedElementsAre("4 1001-1001 1001", "6 1001-1001 1001"));
}

// Without the device the refusals are the prohibits alone, and Prepare says so.
TEST_F(InboundRoutingTest, WithoutTheDeviceEveryRefusalIsStillMadeUncounted) {
  kernel_.fail_device = absl::NotFoundError("no ifb here");
  absl::StatusOr<std::vector<std::string>> lines = routing_.Prepare();
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_THAT(lines->front(), HasSubstr("not counted"));
  EXPECT_THAT(lines->front(), HasSubstr("no ifb here"));
  ASSERT_TRUE(routing_.Apply(Subject(1001)).ok());
  EXPECT_THAT(Refusals(kernel_), UnorderedElementsAre("4 1001-1001 1001", "6 1001-1001 1001"));
  EXPECT_THAT(Refusals(kernel_, kRoutePriority), IsEmpty());
  EXPECT_THAT(kernel_.routes, IsEmpty());
}

// The block as an older leashd left it (prohibits at 2, the end at 3) becomes the current one,
// the subject never without a refusal on the way.
TEST_F(InboundRoutingTest, AnOlderLayoutOfTheBlockIsReplaced) {
  for (int family : {AF_INET, AF_INET6}) {
    RouteRule end;
    end.family = family;
    end.priority = 3;
    end.action = FR_ACT_NOP;
    end.protocol = kLeashRuleProtocol;
    RouteRule gate = FrameRouteRules()[1];
    gate.family = family;
    gate.goto_target = 3;
    RouteRule old = RefusalRouteRules(1001, {{1001, 1001}}, false)[0];
    old.family = family;
    old.priority = 2;
    kernel_.rules.insert(kernel_.rules.end(), {end, gate, old});
  }
  ASSERT_TRUE(routing_.Prepare().ok());
  ASSERT_TRUE(routing_.Apply(Subject(1001)).ok());
  std::vector<RouteRule> want = FrameRouteRules();
  for (const RouteRule& rule : DesiredRefusals(Subject(1001))) want.push_back(rule);
  for (const RouteRule& rule : HullGateRouteRules(want)) want.push_back(rule);
  EXPECT_THAT(kernel_.rules, UnorderedElementsAreArray(want));
}

TEST_F(InboundRoutingTest, ChangedRangesAreAddedBeforeTheOldOnesGo) {
  ASSERT_TRUE(routing_.Apply(Subject(1001, {{100000, 165535}})).ok());
  kernel_.log.clear();
  ASSERT_TRUE(routing_.Apply(Subject(1001, {{200000, 265535}})).ok());
  // The hull gate 1001-165535 would skip the new range: it goes first, the exact one comes
  // last.
  EXPECT_THAT(kernel_.log,
              ElementsAre("delete ipv4 1: not uidrange 1001-165535 goto 4",
                          "delete ipv6 1: not uidrange 1001-165535 goto 4",
                          HasSubstr("add ipv4 3: fwmark 0x1000000/0x1000000 uidrange 200000"),
                          HasSubstr("add ipv6 3: fwmark 0x1000000/0x1000000 uidrange 200000"),
                          HasSubstr("delete ipv4 3: fwmark 0x1000000/0x1000000 uidrange 100000"),
                          HasSubstr("delete ipv6 3: fwmark 0x1000000/0x1000000 uidrange 100000"),
                          "add ipv4 1: not uidrange 1001-265535 goto 4",
                          "add ipv6 1: not uidrange 1001-265535 goto 4"));
}

// The hull gate: a marked lookup of a UID outside every refusal's range goes straight to the
// end. A narrower hull is added before the wider one goes (the new one covers every refusal).
TEST_F(InboundRoutingTest, TheHullGateFollowsTheRefusalsAndNeverNarrowsBelowThem) {
  ASSERT_TRUE(routing_.ApplyAll({Subject(1001, {{100000, 165535}}), Subject(1002)}).ok());
  EXPECT_THAT(HullGateRouteRules(kernel_.rules),
              ElementsAre(HullGateRouteRule(AF_INET, {1001, 165535}),
                          HullGateRouteRule(AF_INET6, {1001, 165535})));
  EXPECT_EQ(std::count(kernel_.rules.begin(), kernel_.rules.end(),
                       HullGateRouteRule(AF_INET, {1001, 165535})),
            1);
  kernel_.log.clear();
  ASSERT_TRUE(routing_.Release(1001).ok());
  EXPECT_THAT(kernel_.log, ElementsAre(HasSubstr("delete ipv4 3:"), HasSubstr("delete ipv4 3:"),
                                       HasSubstr("delete ipv6 3:"), HasSubstr("delete ipv6 3:"),
                                       "add ipv4 1: not uidrange 1002-1002 goto 4",
                                       "add ipv6 1: not uidrange 1002-1002 goto 4",
                                       "delete ipv4 1: not uidrange 1001-165535 goto 4",
                                       "delete ipv6 1: not uidrange 1001-165535 goto 4"));
  ASSERT_TRUE(routing_.Release(1002).ok());
  EXPECT_THAT(kernel_.rules, IsEmpty());
}

TEST_F(InboundRoutingTest, AFailedAddDeletesNothing) {
  ASSERT_TRUE(routing_.Apply(Subject(1001, {{100000, 165535}})).ok());
  kernel_.fail_add = absl::PermissionDeniedError("EPERM");
  EXPECT_TRUE(absl::IsPermissionDenied(routing_.Apply(Subject(1001, {{200000, 265535}}))));
  EXPECT_EQ(Refusals(kernel_).size(), 4u);
}

// After a restart the kernel still holds every subject's rules; applying one subject touches
// no other's, and duplicates of its own (two leashd runs racing) go.
TEST_F(InboundRoutingTest, ASubjectsApplyKeepsTheRulesOfSubjectsNotAppliedYet) {
  for (const RouteRule& rule : RefusalRouteRules(1002, {{1002, 1002}})) {
    kernel_.rules.push_back(rule);
  }
  for (const RouteRule& rule : RefusalRouteRules(1001, {{1001, 1001}})) {
    kernel_.rules.push_back(rule);
    kernel_.rules.push_back(rule);
  }
  ASSERT_TRUE(routing_.Apply(Subject(1001)).ok());
  EXPECT_THAT(Refusals(kernel_),
              UnorderedElementsAre("4 1002-1002 1002", "6 1002-1002 1002", "4 1001-1001 1001",
                                   "6 1001-1001 1001"));
}

TEST_F(InboundRoutingTest, ReleaseRemovesOnlyThatSubjectsRules) {
  ASSERT_TRUE(routing_.Prepare().ok());
  ASSERT_TRUE(routing_.ApplyAll({Subject(1001, {{100000, 165535}}), Subject(1002)}).ok());
  ASSERT_TRUE(routing_.Release(1001).ok());
  EXPECT_THAT(Refusals(kernel_), UnorderedElementsAre("4 1002-1002 1002", "6 1002-1002 1002"));
  ASSERT_TRUE(routing_.Release(4242).ok());  // none is not an error
  EXPECT_THAT(kernel_.routes, UnorderedElementsAre(std::pair<int, uint32_t>{AF_INET, 1002},
                                                   std::pair<int, uint32_t>{AF_INET6, 1002}));
  ASSERT_TRUE(routing_.ReleaseHost().ok());
  EXPECT_THAT(kernel_.rules, IsEmpty());
  EXPECT_FALSE(kernel_.device);
}

TEST_F(InboundRoutingTest, ReleaseHostSaysWhatItCouldNotList) {
  kernel_.fail_list = absl::UnavailableError("netlink is gone");
  absl::Status s = routing_.ReleaseHost();
  EXPECT_THAT(std::string(s.message()), HasSubstr("netlink is gone"));
}

TEST(DiffRouteRules, AddsWhatIsMissingAndRemovesOnlySelectedRules) {
  const std::vector<RouteRule> mine = RefusalRouteRules(1001, {{1001, 1001}}, false);
  const std::vector<RouteRule> theirs = RefusalRouteRules(1002, {{1002, 1002}}, false);
  std::vector<RouteRule> present = theirs;
  present.push_back(mine[0]);
  const RouteRuleDiff diff = DiffRouteRules(mine, present, [](const RouteRule& rule) {
    return rule.table == 1001;
  });
  EXPECT_THAT(diff.add, ElementsAre(mine[1]));
  EXPECT_THAT(diff.remove, IsEmpty());
}

TEST(InboundRoutedNetfilter, AppliesAndReleasesTheRoutingWithTheChains) {
  const std::string saved = absl::StrCat(std::getenv("TEST_TMPDIR"), "/routed.saved");
  FakeNetfilter chains;
  FakeRouteRules kernel;
  InboundRouting routing(&kernel, saved);
  InboundRoutedNetfilter nf(&chains, &routing);
  ASSERT_TRUE(nf.Prepare().ok());
  EXPECT_TRUE(chains.prepared());
  EXPECT_EQ(kernel.fwmark_accept, 1);
  ASSERT_TRUE(nf.Apply(Subject(1001)).ok());
  EXPECT_EQ(chains.subjects().count(1001), 1u);
  EXPECT_EQ(Refusals(kernel).size(), 2u);
  ASSERT_TRUE(nf.ApplyAll({Subject(1002), Subject(1003)}).ok());
  EXPECT_EQ(Refusals(kernel).size(), 6u);
  // A failed chain apply leaves the routing as it was (the reconcile reports and retries).
  chains.FailApply(1004, absl::InternalError("nft said no"));
  EXPECT_FALSE(nf.Apply(Subject(1004)).ok());
  EXPECT_EQ(Refusals(kernel).size(), 6u);
  // A failed chain release still releases the routing, and reports the chains' error.
  chains.FailRelease(1001, absl::InternalError("nft said no"));
  EXPECT_THAT(std::string(nf.Release(1001).message()), HasSubstr("nft said no"));
  EXPECT_EQ(Refusals(kernel).size(), 4u);
  EXPECT_EQ(nf.Describe(), "fake netfilter + policy routing");
  ASSERT_TRUE(routing.ReleaseHost().ok());
}

}  // namespace
}  // namespace leash::controlplane
