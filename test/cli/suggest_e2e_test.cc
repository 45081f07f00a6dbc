// From observation to a profile, for real: an agent runs a small workload (HTTP to a test host,
// reads in a file tree, two commands) under a floor that lets it; `leash suggest` turns its
// decision-log lines into a profile; the printed `leash profile save` and `leash bind` lines
// are run as printed (with their --ack tokens); then the same workload runs with no block, and
// each action outside it (another file, a third command, another port) is blocked.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/cli/hello_server.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;

class SuggestEndToEndTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_TRUE(ns_->AddVethPair({"192.0.2.10/24"}, {"192.0.2.11/24"}).ok());
    ASSERT_NE(MountTmpfs(), nullptr);
    user_ = AddAccount("lsu" + RunTag());
    ASSERT_NE(user_, nullptr);
    agent_ = AddAccount("leash-lsa" + RunTag());
    ASSERT_NE(agent_, nullptr);
    ASSERT_NE(MakeFiles("lsugg"), nullptr);

    // The agent's world on the watched tmpfs: a work tree, a file beside it, three programs.
    const std::string& root = fs_->path();
    for (const char* dir : {"/work", "/work/sub", "/bin"}) {
      ASSERT_EQ(mkdir((root + dir).c_str(), 0755), 0) << dir;
    }
    for (const char* file : {"/work/a.txt", "/work/b.txt", "/work/c.txt", "/work/sub/d.txt",
                             "/outside.txt"}) {
      std::ofstream(root + file) << "text\n";
      chmod((root + file).c_str(), 0644);
    }
    for (const char* tool : {"/bin/tool-one", "/bin/tool-two", "/bin/tool-three"}) {
      ASSERT_TRUE(RunOk({"cp", "/bin/true", root + tool}).ok());
      chmod((root + tool).c_str(), 0755);
    }
    std::ofstream(files_->Join("server.py")) << kHelloServerPy;
    for (const char* port : {"8080", "8081"}) {
      auto server = Background::Start(
          ns_->ExecSharingMounts({"/usr/bin/python3", files_->Join("server.py"), port}));
      ASSERT_TRUE(server.ok()) << server.status();
      servers_.push_back(*std::move(server));
    }
    ASSERT_TRUE(WaitFor(
        [&] {
          auto listening = ns_->Run({"ss", "-Hltn", "sport = :8080 or sport = :8081"});
          return listening.ok() && absl::StrContains(listening->out, ":8080") &&
                 absl::StrContains(listening->out, ":8081");
        },
        absl::Seconds(30)));

    // Observation: the floor lets the agent do all of it, and logs every decision. The watcher
    // marks only the mounts a policy names: the deny entries put the tmpfs under it.
    const std::string floor = absl::StrCat(
        "user: ", user_->name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"192.0.2.0/24\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/never\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [\"", root, "/bin/never\"] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
        "logging: { level: info, decisions: ", decisions(), " }\n");
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  std::string decisions() const { return files_->Join("decisions.jsonl"); }

  // Runs python3 `script` as the agent in the namespace; its output.
  RunResult AsAgent(const std::string& script) {
    auto run = leash::testing::Run(ns_->ExecSharingMounts(agent_->AsUser({"/usr/bin/python3", "-c", script})),
                   absl::Seconds(60));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunResult();
  }

  std::string Workload() const {
    const std::string& root = fs_->path();
    return absl::StrCat(
        "import subprocess, urllib.request\n",
        "print(urllib.request.urlopen('http://192.0.2.11:8080/', timeout=10).read().decode()"
        ".strip())\n",
        "for f in ['a.txt', 'b.txt', 'c.txt', 'sub/d.txt']:\n",
        "  open('", root, "/work/' + f).read()\n",
        "subprocess.run(['", root, "/bin/tool-one'], check=True)\n",
        "subprocess.run(['", root, "/bin/tool-two'], check=True)\n",
        "print('workload done')\n");
  }

  // The agent's lines of the decision log from byte `from` on whose action is `action`.
  std::vector<std::string> AgentLines(size_t from, const std::string& action) {
    std::vector<std::string> out;
    const std::string text = ReadAll(decisions());
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(text).substr(std::min(from, text.size())), '\n',
                        absl::SkipEmpty())) {
      if (absl::StrContains(line, absl::StrCat("\"uid\":", agent_->uid(), ",")) &&
          absl::StrContains(line, absl::StrCat("\"action\":\"", action, "\""))) {
        out.emplace_back(line);
      }
    }
    return out;
  }

  const TestAccount* user_ = nullptr;
  const TestAccount* agent_ = nullptr;
  std::vector<Background> servers_;
  std::unique_ptr<LeashdInstance> leashd_;
};

TEST_F(SuggestEndToEndTest, TheSuggestedProfileAllowsTheWorkloadAndNothingBeside) {
  RunResult observed = AsAgent(Workload());
  ASSERT_EQ(observed.exit_code, 0) << observed.out;
  ASSERT_THAT(observed.out, HasSubstr("workload done"));
  // The log is written after the answers: wait for the last of the workload's lines.
  const std::string root = fs_->path();
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(ReadAll(decisions()), "/bin/tool-two"); },
                      absl::Seconds(20)))
      << ReadAll(decisions());
  absl::SleepFor(absl::Milliseconds(500));

  auto suggested = leashd_->Cli({"suggest", "--account", agent_->name(), "--surface",
                                 "network,filesystem,commands", "--state-dir",
                                 leashd_->state_dir()});
  ASSERT_TRUE(suggested.ok()) << suggested.status();
  ASSERT_EQ(suggested->exit_code, 0) << suggested->out;
  const std::string& text = suggested->out;
  EXPECT_THAT(text, HasSubstr("- \"192.0.2.11/32:8080\""));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("- \"", root, "/work\"")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("- \"", root, "/bin/tool-one\"")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("- \"", root, "/bin/tool-two\"")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("tool-three")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("outside.txt")));

  // Save the output where the printed lines expect it, and run them as printed.
  const std::string profile = agent_->name() + "-observed";
  std::ofstream(files_->Join(profile + ".yaml")) << text;
  std::vector<std::string> commands;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "#   sudo leash ")) commands.emplace_back(line);
  }
  ASSERT_EQ(commands.size(), 2u) << text;
  EXPECT_THAT(commands[1], HasSubstr("--ack 'network.allow:192.0.2.11/32:8080'"));
  for (const std::string& command : commands) {
    auto run = leash::testing::Run({"bash", "-c",
                    absl::StrCat("cd ", files_->path(), " && ", RunfilePath("cli/leash"),
                                 " --config=", leashd_->config_path(),
                                 " --socket=", leashd_->admin_socket(), " ", command)},
                   absl::Seconds(120));
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << command << "\n" << run->out;
  }

  // The same workload under the suggested profile: no block.
  const size_t mark = ReadAll(decisions()).size();
  RunResult again = AsAgent(Workload());
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_THAT(again.out, HasSubstr("workload done"));
  absl::SleepFor(absl::Seconds(1));
  EXPECT_THAT(AgentLines(mark, "block"), ::testing::IsEmpty());

  // Each thing beside it is blocked.
  RunResult outside = AsAgent(absl::StrCat(
      "import subprocess, urllib.request\n",
      "try:\n  open('", root, "/outside.txt').read(); print('file allowed')\n",
      "except PermissionError: print('file refused')\n",
      "try:\n  subprocess.run(['", root, "/bin/tool-three'], check=True); print('exec allowed')\n",
      "except PermissionError: print('exec refused')\n",
      "try:\n  urllib.request.urlopen('http://192.0.2.11:8081/', timeout=10).read(); "
      "print('port allowed')\n",
      "except Exception: print('port refused')\n"));
  EXPECT_THAT(outside.out, HasSubstr("file refused"));
  EXPECT_THAT(outside.out, HasSubstr("exec refused"));
  EXPECT_THAT(outside.out, HasSubstr("port refused"));
  ASSERT_TRUE(WaitFor([&] { return AgentLines(mark, "block").size() >= 3; }, absl::Seconds(20)))
      << ReadAll(decisions());
}

}  // namespace
}  // namespace leash::testing
