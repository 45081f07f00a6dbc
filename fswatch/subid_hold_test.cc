#include "fswatch/subid_hold.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

policystream::SubjectEntry Iris() {
  policystream::SubjectEntry entry;
  entry.uid = 1001;
  entry.account = "leash-iris";
  entry.subordinate_uids = {{100000, 165535}, {300000, 300009}};  // the second not in its chain yet
  entry.subordinate_uids_in_chain = {{100000, 165535}};
  entry.subordinate_gids = {{100000, 165535}};
  entry.subid_owners = {"1001", "iris-alias", "leash-iris"};
  return entry;
}

TEST(SubidHold, OnlyTheTwoFilesNewuidmapReadsAreHeld) {
  EXPECT_EQ(SubidFileAt("/etc/subuid"), SubidFile::kUids);
  EXPECT_EQ(SubidFileAt("/etc/subgid"), SubidFile::kGids);
  EXPECT_EQ(SubidFileAt("/etc/subuid-"), std::nullopt);
  EXPECT_EQ(SubidFileAt("/tmp/etc/subuid"), std::nullopt);
}

TEST(SubidHold, ARangeTheFileGivesTheSubjectIsInForceOnlyWhenTheMapHoldsIt) {
  const policystream::SubjectEntry iris = Iris();
  std::string missing;
  EXPECT_TRUE(SubidRangesInForce("leash-iris:100000:65536\nbob:200000:10\n", SubidFile::kUids,
                                 iris, missing));
  // Its own UID is always its own.
  EXPECT_TRUE(SubidRangesInForce("leash-iris:1001:1\n", SubidFile::kUids, iris, missing));
  struct Case {
    const char* text;
    const char* missing;
  };
  const Case cases[] = {
      {"leash-iris:100000:65536\nleash-iris:300000:10\n", "300000-300009"},  // added by name
      {"1001:300000:10\n", "300000-300009"},                              // by its UID
      {"iris-alias:300000:10\n", "300000-300009"},                        // by an alias
      {"leash-iris:0x493E0:10\n", "300000-300009"},                       // in hex
      {"leash-iris:300000:10:\n", "300000-300009"},                       // a trailing field
      {"leash-iris:0:0\n", "0-1000"},                                     // every ID
      {"leash-iris:165530:10\n", "165536-165539"},                        // partly in force
  };
  for (const Case& c : cases) {
    missing.clear();
    EXPECT_FALSE(SubidRangesInForce(c.text, SubidFile::kUids, iris, missing)) << c.text;
    EXPECT_EQ(missing, c.missing) << c.text;
  }
  // GIDs against the subordinate GIDs (its own GID is granted by newgidmap without the file).
  EXPECT_TRUE(SubidRangesInForce("leash-iris:100000:10\n", SubidFile::kGids, iris, missing));
  EXPECT_FALSE(SubidRangesInForce("leash-iris:1001:1\n", SubidFile::kGids, iris, missing));
}

TEST(SubidHold, WithoutOwnersFromLeashdTheAccountNameAndUidAreTheOwners) {
  policystream::SubjectEntry iris = Iris();
  iris.subid_owners.clear();
  std::string missing;
  EXPECT_FALSE(SubidRangesInForce("leash-iris:300000:10\n", SubidFile::kUids, iris, missing));
  EXPECT_FALSE(SubidRangesInForce("1001:300000:10\n", SubidFile::kUids, iris, missing));
  EXPECT_TRUE(SubidRangesInForce("bob:300000:10\n", SubidFile::kUids, iris, missing));
}

}  // namespace
}  // namespace leash::fswatch
