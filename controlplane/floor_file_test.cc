#include "controlplane/floor_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

TEST(FloorFile, MissingFloorNamesLeashInit) {
  absl::StatusOr<leash::v1::Config> floor = LoadFloor("/nonexistent/leash.yaml");
  EXPECT_TRUE(absl::IsNotFound(floor.status()));
  EXPECT_THAT(std::string(floor.status().message()), HasSubstr("leash init --user"));
}

TEST(FloorFile, WriteIs0640RootGroupAndRoundTrips) {
  auto dir = *leash::testing::TempDir::Create("floor");
  const std::string path = dir->Join("leash.yaml");
  leash::v1::Config config;
  config.set_user("fido");
  config.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
  config.mutable_network()->mutable_allow()->add_entries("github.com");
  const gid_t gid = getegid() == 0 ? 4242 : getegid();
  ASSERT_TRUE(WriteFloor(path, config, gid).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  if (geteuid() == 0) {
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_gid, gid);
  }
  absl::StatusOr<leash::v1::Config> again = LoadFloor(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->network().allow().entries(0), "github.com");
}

TEST(FloorFile, InertEntryIsRefusedOnWriteWithItsReason) {
  leash::v1::Config config;
  leash::v1::InertEntry inert;
  absl::StatusOr<bool> added =
      AddFloorEntry(config, leash::v1::SURFACE_NETWORK, true, "https://github.com", &inert);
  EXPECT_TRUE(absl::IsInvalidArgument(added.status()));
  EXPECT_EQ(inert.field(), "network.allow");
  EXPECT_EQ(inert.entry(), "https://github.com");
  EXPECT_THAT(inert.reason(), HasSubstr("a URL"));
  EXPECT_FALSE(config.network().has_allow());
}

TEST(FloorFile, AddingAnEntryTwiceChangesNothing) {
  leash::v1::Config config;
  EXPECT_TRUE(*AddFloorEntry(config, leash::v1::SURFACE_COMMANDS, false, "ssh", nullptr));
  EXPECT_FALSE(*AddFloorEntry(config, leash::v1::SURFACE_COMMANDS, false, "ssh", nullptr));
  EXPECT_EQ(config.commands().deny().entries_size(), 1);
}

TEST(FloorFile, SetModeReportsWhetherItChanged) {
  leash::v1::Config config;
  EXPECT_TRUE(SetFloorMode(config, leash::v1::SURFACE_FILESYSTEM, leash::v1::MODE_BLACKLIST));
  EXPECT_FALSE(SetFloorMode(config, leash::v1::SURFACE_FILESYSTEM, leash::v1::MODE_BLACKLIST));
  EXPECT_EQ(config.filesystem().mode(), leash::v1::MODE_BLACKLIST);
}

}  // namespace
}  // namespace leash::controlplane
