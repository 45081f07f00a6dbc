#include "controlplane/subordinate_plan.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using engine::UidRange;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

Account Agent(const std::string& name, uint32_t uid, std::vector<UidRange> ranges) {
  Account account{name, uid, uid};
  account.subordinate_uids = std::move(ranges);
  return account;
}

TEST(SubordinatePlan, DisjointRangesAreEachSubjectsOwnAndNobodyIsDenied) {
  const SubordinatePlan plan = PlanSubordinateUids(
      {Agent("leash-iris", 1001, {{100000, 165535}}), Agent("leash-vader", 1002, {{165536, 231071}}),
       Agent("fido", 1000, {})},
      {}, {});
  EXPECT_THAT(plan.conflicts, IsEmpty());
  EXPECT_THAT(plan.ranges.at(1001), ElementsAre(UidRange{100000, 165535}));
  EXPECT_THAT(plan.ranges.at(1002), ElementsAre(UidRange{165536, 231071}));
  EXPECT_EQ(plan.ranges.count(1000), 0u);
}

TEST(SubordinatePlan, OverlappingRangesDenyBothAndTheOverlapGoesToOneOfThem) {
  const SubordinatePlan plan = PlanSubordinateUids(
      {Agent("leash-iris", 1001, {{100000, 165535}}), Agent("leash-vader", 1002, {{160000, 200000}})},
      {}, {});
  ASSERT_THAT(plan.conflicts.at(1001), SizeIs(1));
  EXPECT_THAT(plan.conflicts.at(1001).front(),
              AllOf(HasSubstr("leash-iris's subordinate UIDs 100000-165535"),
                    HasSubstr("leash-vader's subordinate UIDs 160000-200000"), HasSubstr("overlap")));
  EXPECT_THAT(plan.conflicts.at(1002), SizeIs(1));
  // Every UID of both still belongs to exactly one of them (both are denied on every surface).
  EXPECT_THAT(plan.ranges.at(1001), ElementsAre(UidRange{100000, 165535}));
  EXPECT_THAT(plan.ranges.at(1002), ElementsAre(UidRange{165536, 200000}));
}

TEST(SubordinatePlan, ARangeHoldingAnotherSubjectsUidDeniesBothAndTheUidStaysItsOwners) {
  const SubordinatePlan plan = PlanSubordinateUids(
      {Agent("leash-iris", 1001, {{1000, 1010}}), Agent("leash-vader", 1005, {})}, {}, {});
  EXPECT_THAT(plan.conflicts.at(1001), ElementsAre(HasSubstr("leash-vader's UID 1005")));
  EXPECT_THAT(plan.conflicts.at(1005), SizeIs(1));
  EXPECT_THAT(plan.ranges.at(1001), ElementsAre(UidRange{1000, 1000}, UidRange{1002, 1004},
                                                UidRange{1006, 1010}));
}

TEST(SubordinatePlan, ARangeHoldingAnUnleashedAccountDeniesTheSubjectAndLeavesThatUidOut) {
  const SubordinatePlan plan =
      PlanSubordinateUids({Agent("leash-iris", 1001, {{100000, 165535}})}, {},
                          {Account{"bob", 100500, 100500}, Account{"leash-iris", 1001, 1001}});
  ASSERT_THAT(plan.conflicts.at(1001), SizeIs(1));
  EXPECT_THAT(plan.conflicts.at(1001).front(),
              AllOf(HasSubstr("UID 100500 of bob"), HasSubstr("usermod --del-subuids 100000-165535 leash-iris")));
  EXPECT_THAT(plan.ranges.at(1001),
              ElementsAre(UidRange{100000, 100499}, UidRange{100501, 165535}));
}

TEST(SubordinatePlan, RangesInForceForAKeptChainAreTakenFirst) {
  const SubordinatePlan plan = PlanSubordinateUids(
      {Agent("leash-new", 1003, {{100000, 100100}})}, {{1001, {{100050, 100200}}}}, {});
  EXPECT_THAT(plan.ranges.at(1001), ElementsAre(UidRange{100050, 100200}));
  EXPECT_THAT(plan.ranges.at(1003), ElementsAre(UidRange{100000, 100049}));
  ASSERT_THAT(plan.conflicts.at(1003), SizeIs(1));
  EXPECT_THAT(plan.conflicts.at(1003).front(),
              AllOf(HasSubstr("still held by uid 1001, which left discovery"),
                    HasSubstr("restart leashd")));
}

TEST(SubordinateGids, ARangeHoldingAHostGroupOrAnotherSubjectsGidsDeniesTheSubject) {
  Account iris = Agent("leash-iris", 1001, {});
  iris.subordinate_gids = {{100, 200}, {100000, 165535}};
  Account vader = Agent("leash-vader", 1002, {});
  vader.subordinate_gids = {{165000, 170000}};
  Account fido = Agent("fido", 1000, {});
  const auto conflicts = SubordinateGidConflicts(
      {iris, vader, fido}, {Group{"docker", 150}, Group{"leash-iris", 1001}});
  ASSERT_EQ(conflicts.count(1001), 1u);
  EXPECT_THAT(conflicts.at(1001),
              ::testing::Contains(AllOf(HasSubstr("GID 150 of group docker"),
                                        HasSubstr("usermod --del-subgids 100-200 leash-iris"))));
  EXPECT_THAT(conflicts.at(1001), ::testing::Contains(HasSubstr("overlap leash-vader's GIDs")));
  EXPECT_THAT(conflicts.at(1002), ::testing::Contains(HasSubstr("overlap leash-iris's GIDs")));
  EXPECT_EQ(conflicts.count(1000), 0u);
}

TEST(SubordinateGids, DisjointRangesHoldingNoGroupAreFine) {
  Account iris = Agent("leash-iris", 1001, {});
  iris.subordinate_gids = {{100000, 165535}};
  // The account's own group inside its range is its own already.
  EXPECT_TRUE(SubordinateGidConflicts({iris}, {Group{"leash-iris", 1001}}).empty());
  iris.subordinate_gids = {{1000, 1002}};
  EXPECT_TRUE(SubordinateGidConflicts({iris}, {Group{"leash-iris", 1001}}).empty());
}

}  // namespace
}  // namespace leash::controlplane
