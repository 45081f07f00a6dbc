// The decision log and the tools socket's group, with the real leashd, its real sidecars and
// real accounts: an agent flooding allowed opens has its allow lines limited while every block
// is written and the held-back count is reported; logging.level warning writes no allow line;
// the tools socket's group is Leash's own, whose members cannot read the policy; a host whose
// socket was in the leashed user's group is moved and told so; and the log is never opened
// through a planted link nor in a folder anyone but root can write (leashd refuses to start).
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Floor(const std::string& user, const std::string& fs, const std::string& level,
                  const std::string& decisions) {
  return absl::StrCat(
      "user: ", user, "\nfail_mode: closed\n",
      "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
      "filesystem: { mode: blacklist, allow: [], deny: [\"", fs, "/secret\"] }\n",
      "commands: { mode: blacklist, allow: [], deny: [] }\n",
      "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
      "logging: { level: ", level, ", decisions: ", decisions, " }\n");
}

// Lines of `text` about `uid` whose action is `action`, on the flood's files (an allow is of
// open.txt, a block of secret; the agent's python3 opens other files too).
int CountLines(const std::string& text, uint32_t uid, const std::string& action) {
  int n = 0;
  const std::string file = action == "allow" ? "/open.txt\"" : "/secret\"";
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, absl::StrCat("\"uid\":", uid, ",")) &&
        absl::StrContains(line, file) &&
        absl::StrContains(line, absl::StrCat("\"action\":\"", action, "\""))) {
      ++n;
    }
  }
  return n;
}

// The held-back counts reported for `uid`, summed.
uint64_t SuppressedCount(const std::string& text, uint32_t uid) {
  uint64_t total = 0;
  const std::string marker = "decision log: ";
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::StrContains(line, "\"action\":\"suppressed\"") ||
        !absl::StrContains(line, absl::StrCat("\"uid\":", uid, ","))) {
      continue;
    }
    absl::string_view rest = line.substr(line.find(marker) + marker.size());
    uint64_t n = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &n)) total += n;
  }
  return total;
}

class DecisionLogAndGroupsTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_NE(MountTmpfs(), nullptr);
    user_ = AddAccount("lgu" + RunTag());
    ASSERT_NE(user_, nullptr);
    agent_ = AddAccount("leash-lga" + RunTag());
    ASSERT_NE(agent_, nullptr);
    ASSERT_NE(MakeFiles("lid-log"), nullptr);
    tools_group_ = "lgt" + RunTag();
  }

  void TearDown() override {
    if (leashd_) leashd_->Stop().IgnoreError();
    leashd_.reset();
    if (getgrnam(tools_group_.c_str()) != nullptr) {
      leash::testing::Run({"groupdel", tools_group_}).IgnoreError();
    }
  }

  void StartLeashd(const std::string& level) {
    auto leashd = LeashdInstance::Start(
        Floor(user_->name(), fs_->path(), level, decisions()), *ns_, fs_->path(),
        {"--tools-group=" + tools_group_});
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  std::string decisions() const { return files_->Join("decisions.jsonl"); }

  // The agent opens the allowed file `allowed` times and the denied one `denied` times, in
  // one python3 process (so each open is one fanotify event and nothing else is).
  void Flood(int allowed, int denied) {
    std::ofstream(fs_->path() + "/open.txt") << "ok\n";
    std::ofstream(fs_->path() + "/secret") << "no\n";
    chmod((fs_->path() + "/open.txt").c_str(), 0644);
    chmod((fs_->path() + "/secret").c_str(), 0644);
    const std::string script = absl::StrCat(
        "import sys\n", "for i in range(", allowed, "): open('", fs_->path(),
        "/open.txt').close()\n", "refused = 0\n", "for i in range(", denied, "):\n",
        "  try: open('", fs_->path(), "/secret').close()\n",
        "  except PermissionError: refused += 1\n", "print('refused', refused)\n");
    auto run = leash::testing::Run(agent_->AsUser({"/usr/bin/python3", "-c", script}),
                                   absl::Seconds(120));
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << run->out;
    EXPECT_THAT(run->out, HasSubstr(absl::StrCat("refused ", denied)));
  }

  const TestAccount* user_ = nullptr;
  const TestAccount* agent_ = nullptr;
  std::unique_ptr<LeashdInstance> leashd_;
  std::string tools_group_;
};

TEST_F(DecisionLogAndGroupsTest, AnAgentFloodingAllowedOpensHasItsAllowLinesLimitedButEveryBlock) {
  StartLeashd("info");
  constexpr int kAllowed = 20000, kDenied = 500;
  Flood(kAllowed, kDenied);
  const uint32_t uid = agent_->uid();
  std::string text;
  // Every block is written, and the held-back allow lines are reported within a second or two.
  ASSERT_TRUE(WaitFor(
      [&] {
        text = ReadAll(decisions());
        return CountLines(text, uid, "block") >= kDenied &&
               CountLines(text, uid, "allow") + SuppressedCount(text, uid) >= kAllowed;
      },
      absl::Seconds(30)))
      << "blocks " << CountLines(text, uid, "block") << ", allows "
      << CountLines(text, uid, "allow") << ", suppressed " << SuppressedCount(text, uid);
  EXPECT_EQ(CountLines(text, uid, "block"), kDenied);
  const int allows = CountLines(text, uid, "allow");
  EXPECT_LT(allows, kAllowed / 2);
  EXPECT_EQ(allows + SuppressedCount(text, uid), static_cast<uint64_t>(kAllowed));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("allow lines of uid ", uid, " not written between")));
}

TEST_F(DecisionLogAndGroupsTest, LoggingLevelWarningWritesNoAllowLines) {
  StartLeashd("warning");
  Flood(50, 7);
  const uint32_t uid = agent_->uid();
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = ReadAll(decisions());
        return CountLines(text, uid, "block") >= 7;
      },
      absl::Seconds(30)));
  absl::SleepFor(absl::Seconds(1));  // what else the watcher had queued
  text = ReadAll(decisions());
  EXPECT_EQ(CountLines(text, uid, "block"), 7);
  EXPECT_EQ(CountLines(text, uid, "allow"), 0);
  EXPECT_THAT(text, Not(HasSubstr("\"action\":\"allow\"")));
  EXPECT_EQ(SuppressedCount(text, uid), 0u);
}

// Whether `account` (with `group` as a supplementary group) can read `path` / connect to the
// unix socket `socket_path`.
RunResult AsMemberOf(const TestAccount& account, gid_t group, const std::vector<std::string>& argv) {
  const passwd* pw = getpwuid(account.uid());
  std::vector<std::string> full = {"setpriv", absl::StrCat("--reuid=", account.uid()),
                                   absl::StrCat("--regid=", pw ? pw->pw_gid : account.uid()),
                                   absl::StrCat("--groups=", group), "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  absl::StatusOr<RunResult> run = leash::testing::Run(full, absl::Seconds(20));
  return run.ok() ? *run : RunResult{};
}

TEST_F(DecisionLogAndGroupsTest, TheToolsSocketsGroupIsLeashsOwnAndAMemberCannotReadThePolicy) {
  ASSERT_EQ(getgrnam(tools_group_.c_str()), nullptr);
  StartLeashd("info");
  const struct group* made = getgrnam(tools_group_.c_str());
  ASSERT_NE(made, nullptr) << leashd_->Log();
  const gid_t gid = made->gr_gid;
  struct stat st;
  ASSERT_EQ(stat(leashd_->tools_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, gid);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  const passwd* user = getpwnam(user_->name().c_str());
  ASSERT_NE(user, nullptr);
  EXPECT_NE(gid, user->pw_gid);
  EXPECT_THAT(leashd_->Log(), HasSubstr(absl::StrCat("created the group ", tools_group_)));
  EXPECT_THAT(leashd_->Log(), HasSubstr(absl::StrCat("usermod -aG ", tools_group_)));
  // The leashed user (who runs the harness) was added to it.
  auto members = leash::testing::Run({"id", "-nG", user_->name()});
  ASSERT_TRUE(members.ok());
  EXPECT_THAT(members->out, HasSubstr(tools_group_));

  // The policy as an install leaves it: root:<leashed user's group> 0640.
  ASSERT_EQ(chown(leashd_->config_path().c_str(), 0, user->pw_gid), 0);
  ASSERT_EQ(chmod(leashd_->config_path().c_str(), 0640), 0);
  // A member of the tools group reaches the socket (python3 connects) and cannot read the policy.
  const std::string connect = absl::StrCat(
      "import socket; s = socket.socket(socket.AF_UNIX); s.connect('", leashd_->tools_socket(),
      "'); print('connected')");
  RunResult reached = AsMemberOf(*agent_, gid, {"/usr/bin/python3", "-c", connect});
  EXPECT_EQ(reached.exit_code, 0) << reached.out;
  EXPECT_THAT(reached.out, HasSubstr("connected"));
  RunResult read = AsMemberOf(*agent_, gid, {"cat", leashd_->config_path()});
  EXPECT_NE(read.exit_code, 0);
  EXPECT_THAT(read.out, HasSubstr("Permission denied"));
  // And without the group the socket is out of reach.
  RunResult outside = AsMemberOf(*agent_, 65534, {"/usr/bin/python3", "-c", connect});
  EXPECT_NE(outside.exit_code, 0) << outside.out;
}

TEST_F(DecisionLogAndGroupsTest, AnUpgradeMovesTheToolsSocketOffTheUsersGroupAndSaysSo) {
  StartLeashd("info");
  const passwd* user = getpwnam(user_->name().c_str());
  ASSERT_NE(user, nullptr);
  // The host as the previous version left it: no leash-tools group, and the socket (left by a
  // leashd that did not get to remove it) in the leashed user's group.
  ASSERT_EQ(kill(leashd_->pid(), SIGKILL), 0);
  leashd_->Stop().IgnoreError();  // reaps it
  ASSERT_EQ(chown(leashd_->tools_socket().c_str(), 0, user->pw_gid), 0);
  ASSERT_TRUE(leash::testing::Run({"groupdel", tools_group_}).ok());
  ASSERT_EQ(getgrnam(tools_group_.c_str()), nullptr);

  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  const struct group* made = getgrnam(tools_group_.c_str());
  ASSERT_NE(made, nullptr);
  struct stat st;
  ASSERT_EQ(stat(leashd_->tools_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, made->gr_gid);
  const std::string log = leashd_->Log();
  EXPECT_THAT(log, HasSubstr(absl::StrCat("the tools socket's group was ", user_->name(),
                                          "; it is now ", tools_group_)));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("usermod -aG ", tools_group_, " <account>")));
}

// An agent that can write in the log's folder could plant a link there as the log and have
// root append to any file; leashd refuses such a folder at start and says how to fix it.
TEST_F(DecisionLogAndGroupsTest, ALogFolderAnyoneButRootCanWriteIsRefusedAtStartWithTheFix) {
  ASSERT_EQ(chmod(files_->path().c_str(), 0777), 0);
  const std::string victim = fs_->path() + "/root-owned-file";
  std::ofstream(victim) << "root's\n";
  ASSERT_TRUE(RunOk(agent_->AsUser({"ln", "-s", victim, decisions()})).ok());
  auto leashd = LeashdInstance::Start(Floor(user_->name(), fs_->path(), "info", decisions()),
                                      *ns_, fs_->path(), {"--tools-group=" + tools_group_});
  ASSERT_FALSE(leashd.ok()) << "leashd started with its log in a folder everyone can write";
  const std::string said(leashd.status().message());
  EXPECT_THAT(said, HasSubstr(absl::StrCat("not starting: the decision log's folder ",
                                           files_->path(), " is writable by everyone")));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("chmod go-w ", files_->path())));
  EXPECT_EQ(ReadAll(victim), "root's\n");

  // Group-writable is refused the same way.
  ASSERT_EQ(unlink(decisions().c_str()), 0);
  ASSERT_EQ(chmod(files_->path().c_str(), 0775), 0);
  leashd = LeashdInstance::Start(Floor(user_->name(), fs_->path(), "info", decisions()), *ns_,
                                 fs_->path(), {"--tools-group=" + tools_group_});
  ASSERT_FALSE(leashd.ok());
  EXPECT_THAT(std::string(leashd.status().message()), HasSubstr("is writable by its group"));
  struct stat st;
  EXPECT_NE(lstat(decisions().c_str(), &st), 0) << "a refused start created the log";
}

// A link already sitting where the log goes (planted while the folder was open to others) is
// never followed: leashd refuses to start, names it, and the file it points at is untouched.
TEST_F(DecisionLogAndGroupsTest, ASymlinkPlantedAsTheLogIsNeverFollowed) {
  const std::string victim = fs_->path() + "/root-owned-file";
  std::ofstream(victim) << "root's\n";
  ASSERT_EQ(symlink(victim.c_str(), decisions().c_str()), 0);
  auto leashd = LeashdInstance::Start(Floor(user_->name(), fs_->path(), "info", decisions()),
                                      *ns_, fs_->path(), {"--tools-group=" + tools_group_});
  ASSERT_FALSE(leashd.ok()) << "leashd started writing its log through a link";
  const std::string said(leashd.status().message());
  EXPECT_THAT(said, HasSubstr(absl::StrCat("the decision log ", decisions(), " is a symlink")));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("rm ", decisions())));
  EXPECT_EQ(ReadAll(victim), "root's\n");

  // A dangling link creates nothing where it points.
  const std::string nowhere = fs_->path() + "/made-by-root";
  ASSERT_EQ(unlink(decisions().c_str()), 0);
  ASSERT_EQ(symlink(nowhere.c_str(), decisions().c_str()), 0);
  leashd = LeashdInstance::Start(Floor(user_->name(), fs_->path(), "info", decisions()), *ns_,
                                 fs_->path(), {"--tools-group=" + tools_group_});
  ASSERT_FALSE(leashd.ok());
  struct stat st;
  EXPECT_NE(lstat(nowhere.c_str(), &st), 0) << "leashd created the link's target";
}

}  // namespace
}  // namespace leash::testing
