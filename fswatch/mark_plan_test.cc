// Which filesystems are marked for which policies, the test-only confinement, and the marker
// keeping the group's marks equal to the plan.
#include "fswatch/mark_plan.h"

#include <cerrno>

#include "engine/compiled_policy.h"
#include "fswatch/marker.h"
#include "fswatch/testing/fake_fanotify_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// One line per mount, as /proc/self/mountinfo has it.
constexpr char kMountInfo[] =
    "21 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "22 21 0:20 / /proc rw,nosuid - proc proc rw\n"
    "23 21 254:1 / /home rw,relatime shared:2 - ext4 /dev/vda2 rw\n"
    "24 21 0:40 / /tmp/t rw - tmpfs leash-test rw,size=65536k\n"
    "25 24 0:41 / /tmp/t/inner rw - tmpfs inner rw\n"
    "26 21 0:50 / /mnt/auto rw - autofs systemd-1 rw\n"
    "27 21 254:1 /srv /srv/bind rw - ext4 /dev/vda2 rw\n";

std::vector<MountEntry> Mounts() { return ParseMountInfo(kMountInfo).value(); }

policystream::SubjectMap MapOf(const leash::v1::Config& config) {
  policystream::SubjectMap map;
  policystream::SubjectEntry entry;
  entry.uid = 2001;
  entry.policy =
      std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
  map[2001] = entry;
  return map;
}

leash::v1::Config Blacklist(std::vector<std::string> fs_deny, std::vector<std::string> cmd_deny) {
  leash::v1::Config config;
  config.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  for (const auto& d : fs_deny) config.mutable_filesystem()->mutable_deny()->add_entries(d);
  config.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  for (const auto& d : cmd_deny) config.mutable_commands()->mutable_deny()->add_entries(d);
  return config;
}

TEST(PlanMarks, WhitelistNeedsEveryFilesystemButProcAndAutofs) {
  leash::v1::Config config;  // defaults: whitelist everywhere
  const MarkPlan plan = PlanMarks(MapOf(config), Mounts(), MarkOptions{});
  EXPECT_TRUE(plan.every_filesystem);
  EXPECT_THAT(plan.marks, UnorderedElementsAre(Pair("254:0", "/"), Pair("254:1", "/home"),
                                               Pair("0:40", "/tmp/t"),
                                               Pair("0:41", "/tmp/t/inner")));
  ASSERT_EQ(plan.excluded.size(), 2u);
  EXPECT_THAT(plan.excluded[0] + plan.excluded[1], HasSubstr("procfs is never marked"));
  EXPECT_THAT(plan.excluded[0] + plan.excluded[1], HasSubstr("autofs is a trigger"));
}

TEST(PlanMarks, CommandWhitelistAloneAlsoNeedsEveryFilesystem) {
  leash::v1::Config config = Blacklist({}, {});
  config.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  EXPECT_TRUE(PlanMarks(MapOf(config), Mounts(), MarkOptions{}).every_filesystem);
}

TEST(PlanMarks, NoPolicyNeedsEveryFilesystem) {
  policystream::SubjectMap map;
  map[2001] = policystream::SubjectEntry{};
  const MarkPlan plan = PlanMarks(map, Mounts(), MarkOptions{});
  EXPECT_TRUE(plan.every_filesystem);
  EXPECT_EQ(plan.marks.size(), 4u);
}

TEST(PlanMarks, FilesystemBlacklistMarksTheHolderAndWhatIsMountedBelow) {
  const MarkPlan plan =
      PlanMarks(MapOf(Blacklist({"/tmp/t/secret", "/tmp"}, {})), Mounts(), MarkOptions{});
  EXPECT_FALSE(plan.every_filesystem);
  // /tmp lives on the root filesystem, and /tmp/t, /tmp/t/inner are mounted below it.
  EXPECT_THAT(plan.marks, UnorderedElementsAre(Pair("254:0", "/"), Pair("0:40", "/tmp/t"),
                                               Pair("0:41", "/tmp/t/inner")));
}

TEST(PlanMarks, GlobDenyMarksFromItsLiteralDirectory) {
  const MarkPlan plan = PlanMarks(MapOf(Blacklist({"/tmp/t/*/key.pem"}, {})), Mounts(),
                                  MarkOptions{});
  // And the root filesystem, for /etc/subuid (below).
  EXPECT_THAT(plan.marks, UnorderedElementsAre(Pair("254:0", "/"), Pair("0:40", "/tmp/t"),
                                               Pair("0:41", "/tmp/t/inner")));
}

TEST(PlanMarks, CommandDenyByNameMatchesAnywhereSoEveryFilesystem) {
  EXPECT_TRUE(PlanMarks(MapOf(Blacklist({}, {"ssh"})), Mounts(), MarkOptions{}).every_filesystem);
}

TEST(PlanMarks, CommandDenyByPathMarksItsFilesystem) {
  const MarkPlan plan = PlanMarks(MapOf(Blacklist({}, {"/home/bin/tool"})), Mounts(), MarkOptions{});
  EXPECT_FALSE(plan.every_filesystem);
  // One filesystem, two mounts (/home and the bind mount /srv/bind): marked once. And the
  // root filesystem, for /etc/subuid.
  EXPECT_THAT(plan.marks, ElementsAre(Pair("254:0", "/"), Pair("254:1", "/home")));
}

TEST(PlanMarks, FilesystemEnforcerOffMarksOnlyTheSubordinateIdFiles) {
  leash::v1::Config config;
  config.mutable_enforcers()->set_filesystem(false);
  const MarkPlan plan = PlanMarks(MapOf(config), Mounts(), MarkOptions{});
  EXPECT_THAT(plan.marks, ElementsAre(Pair("254:0", "/")));
}

// An agent's open of /etc/subuid or /etc/subgid must raise an event whatever its policy, so that
// the watcher can hold it until the ranges are in force (subid_hold.h); with no subject, nothing.
TEST(PlanMarks, TheSubordinateIdFilesAreOnAMarkedFilesystemForAnySubject) {
  const std::string text = std::string(kMountInfo) + "30 21 0:60 / /etc rw - overlay etcview rw\n";
  const MarkPlan plan =
      PlanMarks(MapOf(Blacklist({"/tmp/t/secret"}, {})), ParseMountInfo(text).value(), MarkOptions{});
  EXPECT_THAT(plan.marks, UnorderedElementsAre(Pair("0:60", "/etc"), Pair("0:40", "/tmp/t")));
  EXPECT_THAT(PlanMarks(policystream::SubjectMap{}, ParseMountInfo(text).value(), MarkOptions{}).marks,
              IsEmpty());
  // Under --mark-only-under: a private /etc (a test's view of the accounts) is marked, the root
  // filesystem never.
  EXPECT_THAT(PlanMarks(MapOf(Blacklist({}, {})), ParseMountInfo(text).value(),
                        MarkOptions{"/tmp/t"}).marks,
              ElementsAre(Pair("0:60", "/etc")));
  EXPECT_THAT(PlanMarks(MapOf(Blacklist({}, {})), Mounts(), MarkOptions{"/tmp/t"}).marks, IsEmpty());
}

TEST(PlanMarks, OnlyUnderConfinesMarksToFilesystemsWhollyBelowIt) {
  leash::v1::Config config;  // whitelist: wants everything
  const MarkPlan plan = PlanMarks(MapOf(config), Mounts(), MarkOptions{"/tmp/t"});
  EXPECT_THAT(plan.marks, UnorderedElementsAre(Pair("0:40", "/tmp/t"), Pair("0:41", "/tmp/t/inner")));
  std::string excluded;
  for (const auto& e : plan.excluded) excluded += e + "\n";
  EXPECT_THAT(excluded, HasSubstr("/ (ext4, 254:0): has a mount outside --mark-only-under=/tmp/t"));
  EXPECT_THAT(excluded, HasSubstr("/home (ext4, 254:1)"));
}

TEST(PlanMarks, OnlyUnderNeverMarksTheRootFilesystemEvenBindMountedBelowIt) {
  const std::string text = std::string(kMountInfo) +
                           "28 24 254:0 /var /tmp/t/var rw - ext4 /dev/vda1 rw\n"
                           "29 24 254:1 /x /tmp/t/x rw - ext4 /dev/vda2 rw\n";
  leash::v1::Config config;
  const MarkPlan plan = PlanMarks(MapOf(config), ParseMountInfo(text).value(), MarkOptions{"/tmp/t"});
  EXPECT_EQ(plan.marks.count("254:0"), 0u);
  EXPECT_EQ(plan.marks.count("254:1"), 0u);  // also mounted at /home, outside
}

TEST(PathIsAtOrUnder, ComponentBoundaries) {
  EXPECT_TRUE(PathIsAtOrUnder("/tmp/t", "/tmp/t"));
  EXPECT_TRUE(PathIsAtOrUnder("/tmp/t/x", "/tmp/t"));
  EXPECT_FALSE(PathIsAtOrUnder("/tmp/tt", "/tmp/t"));
  EXPECT_TRUE(PathIsAtOrUnder("/anything", "/"));
}

class MarkerTest : public ::testing::Test {
 protected:
  MarkerTest()
      : marker_(source_, [this]() -> absl::StatusOr<std::string> {
          if (!readable_) return absl::UnavailableError("open /proc/self/mountinfo: EMFILE");
          return text_;
        }, MarkOptions{}) {}
  testing::FakeFanotifySource source_;
  std::string text_ = kMountInfo;
  bool readable_ = true;
  Marker marker_;
};

TEST_F(MarkerTest, AddsWhatThePlanWantsAndRemovesWhatItNoLongerWants) {
  // "/" holds /etc/subuid, marked for any subject.
  ASSERT_TRUE(marker_.Reconcile(MapOf(Blacklist({"/tmp/t"}, {}))).ok());
  EXPECT_THAT(source_.marked(), UnorderedElementsAre("/", "/tmp/t", "/tmp/t/inner"));
  absl::StatusOr<MarkReport> report = marker_.Reconcile(MapOf(Blacklist({"/home/x"}, {})));
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(source_.marked(), UnorderedElementsAre("/", "/home"));
  EXPECT_EQ(report->removed.size(), 2u);
  EXPECT_THAT(report->added, ElementsAre("/home (254:1)"));
}

TEST_F(MarkerTest, UnreadableMountTableChangesNothing) {
  ASSERT_TRUE(marker_.Reconcile(MapOf(Blacklist({"/tmp/t"}, {}))).ok());
  readable_ = false;
  absl::StatusOr<MarkReport> report = marker_.Reconcile(MapOf(Blacklist({"/home/x"}, {})));
  EXPECT_TRUE(absl::IsUnavailable(report.status()));
  EXPECT_THAT(source_.marked(), UnorderedElementsAre("/", "/tmp/t", "/tmp/t/inner"));
}

TEST_F(MarkerTest, MalformedMountTableChangesNothing) {
  ASSERT_TRUE(marker_.Reconcile(MapOf(Blacklist({"/tmp/t"}, {}))).ok());
  text_ = "garbage\n";
  absl::StatusOr<MarkReport> report = marker_.Reconcile(MapOf(Blacklist({}, {})));
  EXPECT_TRUE(absl::IsInvalidArgument(report.status()));
  EXPECT_THAT(report.status().message(), HasSubstr("line 1"));
  EXPECT_EQ(source_.marked().size(), 3u);
}

TEST_F(MarkerTest, AFailedMarkIsAProblemReportedOnceAndRetried) {
  source_.FailMark("/tmp/t", EINVAL);
  absl::StatusOr<MarkReport> first = marker_.Reconcile(MapOf(Blacklist({"/tmp/t"}, {})));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->new_problems.size(), 1u);
  EXPECT_THAT(first->new_problems[0], HasSubstr("/tmp/t (0:40): could not be marked"));
  EXPECT_THAT(first->new_problems[0], HasSubstr("opens there are not judged"));
  absl::StatusOr<MarkReport> second = marker_.Reconcile(MapOf(Blacklist({"/tmp/t"}, {})));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->problems.size(), 1u);
  EXPECT_THAT(second->new_problems, IsEmpty());
}

TEST_F(MarkerTest, AnUnmountedFilesystemIsForgottenAndANewOneMarked) {
  ASSERT_TRUE(marker_.Reconcile(MapOf(leash::v1::Config())).ok());
  EXPECT_EQ(source_.marked().size(), 4u);
  // /tmp/t/inner went away; /media/usb appeared.
  text_ = "21 1 254:0 / / rw - ext4 /dev/vda1 rw\n"
          "23 21 254:1 / /home rw - ext4 /dev/vda2 rw\n"
          "24 21 0:40 / /tmp/t rw - tmpfs leash-test rw\n"
          "30 21 8:17 / /media/usb rw - vfat /dev/sdb1 rw\n";
  absl::StatusOr<MarkReport> report = marker_.Reconcile(MapOf(leash::v1::Config()));
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->added, ElementsAre("/media/usb (8:17)"));
  EXPECT_THAT(report->removed, ElementsAre("/tmp/t/inner (0:41)"));
  EXPECT_EQ(marker_.marked().size(), 4u);
}

}  // namespace
}  // namespace leash::fswatch
