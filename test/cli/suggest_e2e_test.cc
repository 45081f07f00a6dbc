// From observation to a profile, for real: an agent runs a small workload (HTTP to a test host,
// reads in a file tree, two commands) under a floor that lets it; `leash suggest` turns its
// decision-log lines into a profile; the printed `leash profile save` and `leash bind` lines
// are run as printed (with their --ack tokens); then the same workload runs with no block, and
// each action outside it (another file, a third command, another port) is blocked.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/cli/workload_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;

class SuggestEndToEndTest : public WorkloadTest {
 protected:
  void SetUp() override {
    WorkloadTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("lsu", {"leash-lsa"}, "lsugg"));
    ASSERT_NO_FATAL_FAILURE(MakeWorld());
    // Observation: the floor lets the agent do all of it, and logs every decision. The watcher
    // marks only the mounts a policy names: the deny entries put the tmpfs under it.
    const std::string& root = fs_->path();
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"192.0.2.0/24\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/never\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [\"", root, "/bin/never\"] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n"))));
  }
};

TEST_F(SuggestEndToEndTest, TheSuggestedProfileAllowsTheWorkloadAndNothingBeside) {
  RunResult observed = AsAgent(WorkloadScript());
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
  WriteProfile(profile, text);
  const std::vector<std::string> commands = PrintedCommands(text);
  ASSERT_EQ(commands.size(), 2u) << text;
  EXPECT_THAT(commands[1], HasSubstr("--ack 'network.allow:192.0.2.11/32:8080'"));
  for (const std::string& command : commands) ASSERT_NO_FATAL_FAILURE(LeashAsPrinted(command));

  // The same workload under the suggested profile: no block.
  const size_t mark = LogSize();
  RunResult again = AsAgent(WorkloadScript());
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_THAT(again.out, HasSubstr("workload done"));
  absl::SleepFor(absl::Seconds(1));
  EXPECT_THAT(AgentLines(mark, "\"action\":\"block\""), ::testing::IsEmpty());

  // Each thing beside it is blocked.
  RunResult outside = AsAgent(OutsideScript());
  EXPECT_THAT(outside.out, HasSubstr("file refused"));
  EXPECT_THAT(outside.out, HasSubstr("exec refused"));
  EXPECT_THAT(outside.out, HasSubstr("port refused"));
  ASSERT_TRUE(WaitFor([&] { return AgentLines(mark, "\"action\":\"block\"").size() >= 3; },
                      absl::Seconds(20)))
      << ReadAll(decisions());
}

}  // namespace
}  // namespace leash::testing
