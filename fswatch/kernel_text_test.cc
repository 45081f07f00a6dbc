// The parsers of kernel text: /proc/self/mountinfo (mount points are chosen by whoever
// mounted them) and the Uid/Gid lines of /proc/<pid>/status.
#include <cerrno>
#include <cstring>
#include <string>

#include "fswatch/mountinfo.h"
#include "fswatch/proc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

using ::testing::HasSubstr;

TEST(ParseMountInfo, ReadsFieldsAroundOptionalTags) {
  absl::StatusOr<std::vector<MountEntry>> mounts = ParseMountInfo(
      "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 shared:7 - ext3 /dev/root rw\n");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  ASSERT_EQ(mounts->size(), 1u);
  const MountEntry& m = (*mounts)[0];
  EXPECT_EQ(m.id, 36);
  EXPECT_EQ(m.parent_id, 35);
  EXPECT_EQ(m.device, "98:0");
  EXPECT_EQ(m.root, "/mnt1");
  EXPECT_EQ(m.mount_point, "/mnt/parent");
  EXPECT_EQ(m.fstype, "ext3");
  EXPECT_EQ(m.source, "/dev/root");
}

TEST(ParseMountInfo, UnescapesSpacesTabsNewlinesAndBackslashes) {
  absl::StatusOr<std::vector<MountEntry>> mounts =
      ParseMountInfo("40 1 0:40 / /tmp/a\\040b\\011c\\012d\\134e rw - tmpfs x rw\n");
  ASSERT_TRUE(mounts.ok());
  EXPECT_EQ((*mounts)[0].mount_point, std::string("/tmp/a b\tc\nd\\e"));
}

TEST(ParseMountInfo, KeepsABackslashThatIsNotAnEscape) {
  EXPECT_EQ(UnescapeMountPath("/a\\9x\\"), "/a\\9x\\");
  EXPECT_EQ(UnescapeMountPath("/a\\04"), "/a\\04");
}

struct BadCase {
  const char* rule;
  const char* text;
  const char* fragment;
};

class BadMountInfo : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadMountInfo, IsRefusedWithTheLine) {
  absl::StatusOr<std::vector<MountEntry>> mounts = ParseMountInfo(GetParam().text);
  EXPECT_TRUE(absl::IsInvalidArgument(mounts.status())) << GetParam().rule;
  EXPECT_THAT(mounts.status().message(), HasSubstr(GetParam().fragment)) << GetParam().rule;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, BadMountInfo,
    ::testing::Values(
        BadCase{"no separator", "1 0 8:1 / / rw ext4 x rw\n", "line 1: no ' - fstype"},
        BadCase{"non-numeric id", "x 0 8:1 / / rw - ext4 x rw\n", "not a number"},
        BadCase{"bad device", "1 0 8-1 / / rw - ext4 x rw\n", "major:minor"},
        BadCase{"relative mount point", "1 0 8:1 / tmp rw - ext4 x rw\n", "not an absolute"},
        BadCase{"second line bad", "1 0 8:1 / / rw - ext4 x rw\nbroken\n", "line 2"}));

TEST(ParseProcStatusCreds, ReadsRealEffectiveAndFilesystemIds) {
  const std::string text =
      "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nTgid:\t77\nUid:\t1001\t0\t0\t0\n"
      "Gid:\t1002\t1002\t1002\t1002\nGroups:\t\n";
  Creds creds;
  ASSERT_EQ(ParseProcStatusCreds(text.data(), text.size(), creds), 0);
  EXPECT_EQ(creds.ruid, 1001u);
  EXPECT_EQ(creds.euid, 0u);
  EXPECT_EQ(creds.fsuid, 0u);
  EXPECT_EQ(creds.rgid, 1002u);
}

TEST(ParseProcStatusCreds, AProcessNameCannotFakeTheUidLine) {
  // The kernel escapes a newline in the name as "\n" (two characters); a name such as
  // "x\nUid: 0 0 0 0" therefore never starts a line.
  const std::string text =
      "Name:\tx\\nUid:\t0\t0\t0\t0\nUid:\t1001\t1001\t1001\t1001\nGid:\t5\t5\t5\t5\n";
  Creds creds;
  ASSERT_EQ(ParseProcStatusCreds(text.data(), text.size(), creds), 0);
  EXPECT_EQ(creds.ruid, 1001u);
}

TEST(ParseProcStatusCreds, MissingOrTruncatedLinesAreEinval) {
  Creds creds;
  const std::string no_gid = "Uid:\t1\t1\t1\t1\n";
  EXPECT_EQ(ParseProcStatusCreds(no_gid.data(), no_gid.size(), creds), EINVAL);
  const std::string short_uid = "Uid:\t1\t1\nGid:\t1\t1\t1\t1\n";
  EXPECT_EQ(ParseProcStatusCreds(short_uid.data(), short_uid.size(), creds), EINVAL);
  const std::string huge = "Uid:\t99999999999\t1\t1\t1\nGid:\t1\t1\t1\t1\n";
  EXPECT_EQ(ParseProcStatusCreds(huge.data(), huge.size(), creds), EINVAL);
  EXPECT_EQ(ParseProcStatusCreds("", 0, creds), EINVAL);
}

}  // namespace
}  // namespace leash::fswatch
