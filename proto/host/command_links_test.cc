// ResolveCommandLinks on real files: a folder made for the test stands for the system PATH.
#include "proto/host/command_links.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/temp_dir.h"

namespace leash::host {
namespace {

namespace testing = ::leash::testing;

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

leash::v1::Config Names(std::initializer_list<const char*> allow,
                        std::initializer_list<const char*> deny = {}) {
  leash::v1::Config config;
  config.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  for (const char* name : allow) config.mutable_commands()->mutable_allow()->add_entries(name);
  for (const char* name : deny) config.mutable_commands()->mutable_deny()->add_entries(name);
  return config;
}

class CommandLinksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    absl::StatusOr<std::unique_ptr<testing::TempDir>> dir = testing::TempDir::Create("links");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    ASSERT_EQ(chmod(dir_->path().c_str(), 0755), 0);
    bin_ = dir_->Join("bin");
    ASSERT_EQ(mkdir(bin_.c_str(), 0755), 0);
    ASSERT_EQ(chmod(bin_.c_str(), 0755), 0);  // whatever the umask
    Program("python3.11");
    ASSERT_EQ(symlink("python3.11", (bin_ + "/python3").c_str()), 0);
  }
  void Program(const std::string& name, mode_t mode = 0755) {
    const std::string path = bin_ + "/" + name;
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  std::vector<std::string> Path() const { return {bin_}; }
  std::unique_ptr<testing::TempDir> dir_;
  std::string bin_;
};

TEST_F(CommandLinksTest, ASameNamedLinkOnThePathNamesItsTarget) {
  const std::vector<engine::CommandLink> links =
      ResolveCommandLinks(Names({"python3", "git", "/usr/bin/env"}, {"python3"}), Path());
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].name, "python3");
  EXPECT_EQ(links[0].target, bin_ + "/python3.11");
}

TEST_F(CommandLinksTest, ATargetOthersCanWriteIsNotFollowed) {
  ASSERT_EQ(chmod((bin_ + "/python3.11").c_str(), 0775), 0);
  EXPECT_THAT(ResolveCommandLinks(Names({"python3"}), Path()), IsEmpty());
}

TEST_F(CommandLinksTest, ALinkInAFolderOthersCanWriteIsNotFollowed) {
  ASSERT_EQ(chmod(bin_.c_str(), 0777), 0);
  EXPECT_THAT(ResolveCommandLinks(Names({"python3"}), Path()), IsEmpty());
}

TEST_F(CommandLinksTest, ALinkNotOwnedByRootIsNotFollowed) {
  ASSERT_EQ(lchown((bin_ + "/python3").c_str(), 65534, 65534), 0);
  EXPECT_THAT(ResolveCommandLinks(Names({"python3"}), Path()), IsEmpty());
}

TEST_F(CommandLinksTest, TheFirstFolderHoldingTheNameWins) {
  const std::string first = dir_->Join("first");
  ASSERT_EQ(mkdir(first.c_str(), 0755), 0);
  ASSERT_EQ(chmod(first.c_str(), 0755), 0);
  FILE* f = fopen((first + "/python3").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_THAT(ResolveCommandLinks(Names({"python3"}), {first, bin_}), IsEmpty());
}

// `leash check commands nc` said allow while an exec of /usr/bin/nc was blocked: the name was
// judged as typed. It is found on the PATH as an exec finds it, and its program is judged.
TEST_F(CommandLinksTest, CheckCommandsBareNameIsResolvedOnTheSystemPath) {
  leash::v1::Config config = Names({"python3"});
  config.mutable_commands()->mutable_deny()->add_entries(bin_ + "/python3.11");
  const engine::CompiledPolicy policy =
      engine::CompiledPolicy::Compile(config, ResolveCommandLinks(config, Path()));
  std::string resolved;
  absl::StatusOr<engine::Decision> decision =
      DecideCheckSubject(policy, leash::v1::SURFACE_COMMANDS, "python3", resolved, Path());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_FALSE(decision->allowed()) << decision->reason;
  EXPECT_EQ(resolved, absl::StrCat("python3 is ", bin_, "/python3 on the system PATH, which is ",
                                   bin_, "/python3.11"));
  // Judged by name, as before, the name entry would have allowed it.
  EXPECT_TRUE(policy.DecideCommand("python3").allowed());
}

TEST_F(CommandLinksTest, CheckCommandsNameEntryCoversItsLinksTarget) {
  leash::v1::Config config = Names({"python3"});
  const engine::CompiledPolicy policy =
      engine::CompiledPolicy::Compile(config, ResolveCommandLinks(config, Path()));
  std::string resolved;
  absl::StatusOr<engine::Decision> decision =
      DecideCheckSubject(policy, leash::v1::SURFACE_COMMANDS, "python3", resolved, Path());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_TRUE(decision->allowed()) << decision->reason;
}

TEST_F(CommandLinksTest, CheckCommandsNameNotOnThePathIsJudgedByNameAndSaysSo) {
  const engine::CompiledPolicy policy = engine::CompiledPolicy::Compile(Names({"nc"}));
  std::string resolved;
  absl::StatusOr<engine::Decision> decision =
      DecideCheckSubject(policy, leash::v1::SURFACE_COMMANDS, "nc", resolved, Path());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_TRUE(decision->allowed());
  EXPECT_EQ(resolved, absl::StrCat("nc is not on the system PATH (", bin_,
                                   "): judged by its name only"));
}

TEST_F(CommandLinksTest, CheckCommandsSkipsANameThatCannotBeExecuted) {
  const std::string first = dir_->Join("first");
  ASSERT_EQ(mkdir(first.c_str(), 0755), 0);
  ASSERT_EQ(chmod(first.c_str(), 0755), 0);
  FILE* f = fopen((first + "/python3").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  ASSERT_EQ(chmod((first + "/python3").c_str(), 0644), 0);  // no execute bit: execvp goes on
  std::optional<SystemProgram> found = FindOnSearchPath("python3", {first, bin_});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->found, bin_ + "/python3");
  EXPECT_EQ(found->program, bin_ + "/python3.11");
  EXPECT_EQ(found->origin, engine::ProgramOrigin::kRootControlled);
  // A program others may write is not root-controlled: a name allow does not cover it.
  ASSERT_EQ(chmod((bin_ + "/python3.11").c_str(), 0777), 0);
  found = FindOnSearchPath("python3", {bin_});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->origin, engine::ProgramOrigin::kOther);
}

TEST(SystemCommandLinks, Python3OnThisHost) {
  LEASH_REQUIRE_ROOT();
  struct stat st;
  // Debian 12 makes /usr/bin/python3 a link to python3.11, and scripts/lib/deps.sh installs
  // python3: a host without the link cannot run this test, which fails rather than skips.
  ASSERT_TRUE(lstat("/usr/bin/python3", &st) == 0 && S_ISLNK(st.st_mode))
      << "no /usr/bin/python3 link on this host";
  char real[PATH_MAX];
  ASSERT_NE(realpath("/usr/bin/python3", real), nullptr);
  EXPECT_THAT(ResolveCommandLinks(Names({"python3"}), SystemCommandPath()),
              ElementsAre(Field(&engine::CommandLink::target, std::string(real))));
}

}  // namespace
}  // namespace leash::host
