#include "base/read_file.h"
#include "controlplane/floor_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
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
  ASSERT_TRUE(WriteFloor(path, config, kFloorOwner, gid).ok());
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

// The floor an operator wrote by hand: comments, flow and block style.
constexpr char kHandWritten[] =
    "# Fido's floor. Ask #infra before loosening anything.\n"
    "user: fido\n"
    "network:\n"
    "  mode: whitelist      # default-deny\n"
    "  allow:\n"
    "    - github.com       # code\n"
    "  deny: []\n"
    "commands: { mode: blacklist, deny: [curl] }  # see runbook\n";

std::string Slurp(const std::string& path) { return base::ReadFile(path).value_or(""); }

TEST(FloorFile, AnEditKeepsTheOperatorsCommentsAndLayout) {
  auto dir = *leash::testing::TempDir::Create("floor");
  const std::string path = dir->Join("leash.yaml");
  std::ofstream(path) << kHandWritten;
  const gid_t gid = getegid();
  absl::StatusOr<FloorText> floor = LoadFloorText(path);
  ASSERT_TRUE(floor.ok()) << floor.status();
  ASSERT_TRUE(*AddFloorEntry(floor->config, leash::v1::SURFACE_NETWORK, true, "pypi.org", nullptr));
  absl::StatusOr<FloorWrite> written = WriteEditedFloor(
      path, floor->text,
      PatchFloorEntry(floor->text, leash::v1::SURFACE_NETWORK, true, "pypi.org"), floor->config,
      kFloorOwner, gid);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(written->text_kept) << written->notice;
  EXPECT_EQ(Slurp(path),
            "# Fido's floor. Ask #infra before loosening anything.\n"
            "user: fido\n"
            "network:\n"
            "  mode: whitelist      # default-deny\n"
            "  allow:\n"
            "    - github.com       # code\n"
            "    - \"pypi.org\"\n"
            "  deny: []\n"
            "commands: { mode: blacklist, deny: [curl] }  # see runbook\n");
  EXPECT_NE(access((path + ".before-edit").c_str(), F_OK), 0);

  // A mode change, in the flow-style section.
  floor = LoadFloorText(path);
  ASSERT_TRUE(floor.ok()) << floor.status();
  ASSERT_TRUE(SetFloorMode(floor->config, leash::v1::SURFACE_COMMANDS, leash::v1::MODE_WHITELIST));
  written = WriteEditedFloor(
      path, floor->text,
      PatchFloorMode(floor->text, leash::v1::SURFACE_COMMANDS, leash::v1::MODE_WHITELIST),
      floor->config, kFloorOwner, gid);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(written->text_kept) << written->notice;
  EXPECT_THAT(Slurp(path),
              HasSubstr("commands: { mode: whitelist, deny: [curl] }  # see runbook\n"));
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(FloorFile, AnEditTheTextCannotTakeRewritesWholeAndKeepsThePreviousTextAside) {
  auto dir = *leash::testing::TempDir::Create("floor");
  const std::string path = dir->Join("leash.yaml");
  std::ofstream(path) << kHandWritten;
  absl::StatusOr<FloorText> floor = LoadFloorText(path);
  ASSERT_TRUE(floor.ok()) << floor.status();
  // tools has no section in the text: the edit cannot be made in place.
  ASSERT_TRUE(*AddFloorEntry(floor->config, leash::v1::SURFACE_TOOLS, false, "shell", nullptr));
  absl::StatusOr<FloorWrite> written = WriteEditedFloor(
      path, floor->text, PatchFloorEntry(floor->text, leash::v1::SURFACE_TOOLS, false, "shell"),
      floor->config, kFloorOwner, getegid());
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(written->text_kept);
  EXPECT_EQ(written->notice,
            absl::StrCat(path, " was rewritten whole, without its comments and layout (tools.deny: "
                               "no such section); its previous text is in ",
                         path, ".before-edit"));
  EXPECT_EQ(Slurp(path + ".before-edit"), kHandWritten);
  absl::StatusOr<leash::v1::Config> again = LoadFloor(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tools().deny().entries(0), "shell");
  EXPECT_EQ(again->network().allow().entries(0), "github.com");
}

TEST(FloorFile, AnEditedTextThatReadsBackDifferentlyIsNotWritten) {
  auto dir = *leash::testing::TempDir::Create("floor");
  const std::string path = dir->Join("leash.yaml");
  std::ofstream(path) << kHandWritten;
  absl::StatusOr<FloorText> floor = LoadFloorText(path);
  ASSERT_TRUE(floor.ok()) << floor.status();
  ASSERT_TRUE(*AddFloorEntry(floor->config, leash::v1::SURFACE_NETWORK, false, "evil.example",
                             nullptr));
  // A text edit that went wrong (here: the entry landed in the other list) is caught by the
  // read-back and never reaches the file.
  absl::StatusOr<FloorWrite> written = WriteEditedFloor(
      path, floor->text,
      PatchFloorEntry(floor->text, leash::v1::SURFACE_NETWORK, true, "evil.example"),
      floor->config, kFloorOwner, getegid());
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(written->text_kept);
  EXPECT_THAT(written->notice, HasSubstr("did not read back to the edited policy"));
  absl::StatusOr<leash::v1::Config> again = LoadFloor(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->network().deny().entries(0), "evil.example");
  EXPECT_EQ(again->network().allow().entries_size(), 1);
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
