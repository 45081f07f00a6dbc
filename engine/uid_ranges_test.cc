#include "engine/uid_ranges.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::ElementsAre;

constexpr uint32_t kTop = std::numeric_limits<uint32_t>::max();

TEST(UidRanges, MergeJoinsOverlappingAndAdjacentRangesAndSorts) {
  EXPECT_THAT(MergeUidRanges({{100000, 165535}, {1001, 1001}, {1002, 1002}, {165536, 170000},
                              {160000, 160010}}),
              ElementsAre(UidRange{1001, 1002}, UidRange{100000, 170000}));
  EXPECT_THAT(MergeUidRanges({{kTop, kTop}, {kTop - 1, kTop - 1}}),
              ElementsAre(UidRange{kTop - 1, kTop}));
  EXPECT_TRUE(MergeUidRanges({}).empty());
}

TEST(UidRanges, SubtractCutsHolesAndKeepsTheRest) {
  EXPECT_THAT(SubtractUidRanges({{100000, 165535}}, {{100500, 100500}, {165000, 200000}}),
              ElementsAre(UidRange{100000, 100499}, UidRange{100501, 164999}));
  EXPECT_THAT(SubtractUidRanges({{1001, 1001}}, {{1001, 1001}}), ElementsAre());
  EXPECT_THAT(SubtractUidRanges({{0, kTop}}, {{0, 0}, {kTop, kTop}}),
              ElementsAre(UidRange{1, kTop - 1}));
}

TEST(UidRanges, FormatShowsSinglesAsOneNumber) {
  EXPECT_EQ(FormatUidRanges({{1001, 1001}, {100000, 165535}}), "1001, 100000-165535");
}

TEST(UidRangeIndex, FindsTheOwnerOfAnIdInsideARangeAndNothingBetween) {
  UidRangeIndex index;
  index.Add({100000, 165535}, 1001);
  index.Add({1001, 1001}, 1001);
  index.Add({165536, 231071}, 1002);
  ASSERT_TRUE(index.Build());
  EXPECT_EQ(index.Find(1001), 1001u);
  EXPECT_EQ(index.Find(100000), 1001u);
  EXPECT_EQ(index.Find(165535), 1001u);
  EXPECT_EQ(index.Find(165536), 1002u);
  EXPECT_EQ(index.Find(231071), 1002u);
  EXPECT_EQ(index.Find(231072), std::nullopt);
  EXPECT_EQ(index.Find(0), std::nullopt);  // root is nobody's
  EXPECT_EQ(index.Find(1002), std::nullopt);
  EXPECT_EQ(index.Find(kTop), std::nullopt);
}

TEST(UidRangeIndex, OverlappingRangesAreSaidAndEveryIdKeepsAnOwner) {
  UidRangeIndex index;
  index.Add({100000, 165535}, 1001);
  index.Add({165535, 165600}, 1002);
  index.Add({100010, 100020}, 1003);  // wholly inside 1001's
  EXPECT_FALSE(index.Build());
  EXPECT_EQ(index.Find(100000), 1001u);
  EXPECT_EQ(index.Find(100015), 1001u);
  EXPECT_EQ(index.Find(165535), 1001u);
  EXPECT_EQ(index.Find(165536), 1002u);
  EXPECT_EQ(index.Find(165600), 1002u);
  EXPECT_EQ(index.Find(165601), std::nullopt);
}

}  // namespace
}  // namespace leash::engine
