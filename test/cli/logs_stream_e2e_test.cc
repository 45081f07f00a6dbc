// The live decision stream for real: `leash logs --follow --action block --account X` is
// running when an agent's open, exec and connect are blocked by the sidecars and a tool call
// for it is blocked by leashd's tools service; each block reaches it within a bound, with no
// allow line and no other account's. Then the log is replayed from a ref and from a time. A
// watcher that stops reading loses lines, counted and told, and holds nothing up.
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/agent_fixture.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;

// How long a block may take from the agent's action to the watcher's output: the writer's
// batching, the feed, the hub and one gRPC message, on a loaded shared test machine.
constexpr absl::Duration kBound = absl::Seconds(5);

class LogsStreamTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("lls", {"leash-lla", "leash-llb"}, "llogs"));
    ASSERT_NO_FATAL_FAILURE(
        MakeTree({"/secret", "/bin"}, {"/secret/key.txt"}, {"/bin/forbidden"}));
    const std::string& root = fs_->path();
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"192.0.2.99/32\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/secret\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [\"", root, "/bin/forbidden\"] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n"))));
  }
};

TEST_F(LogsStreamTest, EveryBlockArrivesLiveAndReplaysFromARefAndATime) {
  const std::string root = fs_->path();
  // A block before the watcher starts: its replay (--tail 1) shows the watcher is subscribed.
  ASSERT_EQ(ToolCheck("before_watch"), 1);
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(ReadAll(decisions()), "before_watch"); },
                      absl::Seconds(10)));
  const std::string out = files_->Join("follow.jsonl");
  auto follow = Background::Start(LeashArgs({"logs", "--follow", "--action", "block",
                                             "--account", agent_->name(), "--tail", "1",
                                             "--json"}),
                                  out);
  ASSERT_TRUE(follow.ok()) << follow.status();
  ASSERT_FALSE(WaitForLine(out, {"before_watch"}, absl::Seconds(20)).empty()) << ReadAll(out);

  // The other agent's block and this agent's allow must not reach this watcher.
  ASSERT_EQ(ToolCheck("other_agents_tool", agents_[1]), 1);
  ASSERT_EQ(ToolCheck("read_file"), 0);

  struct Action {
    const char* surface;
    std::string what;
    std::function<void()> act;
  };
  std::vector<Action> actions = {
      {"filesystem", root + "/secret/key.txt",
       [&] {
         RunResult r = AsAgent(absl::StrCat(
             "try:\n  open('", root, "/secret/key.txt').read()\n  print('read')\n"
             "except PermissionError:\n  print('refused')\n"));
         EXPECT_THAT(r.out, HasSubstr("refused"));
       }},
      {"commands", root + "/bin/forbidden",
       [&] {
         RunResult r = AsAgent(absl::StrCat(
             "import subprocess\ntry:\n  subprocess.run(['", root, "/bin/forbidden'])\n"
             "  print('ran')\nexcept PermissionError:\n  print('refused')\n"));
         EXPECT_THAT(r.out, HasSubstr("refused"));
       }},
      {"network", "192.0.2.11",
       [&] {
         AsAgent("import socket\ns = socket.create_connection(('192.0.2.11', 8080), timeout=5)\n"
                 "try:\n  s.sendall(b'GET / HTTP/1.0\\r\\nHost: 192.0.2.11\\r\\n\\r\\n')\n"
                 "  s.recv(10)\nexcept OSError:\n  pass\n");
       }},
      {"tools", "forbidden_tool",
       [&] { EXPECT_EQ(ToolCheck("forbidden_tool"), 1); }},
  };
  std::vector<std::string> refs;
  for (const Action& action : actions) {
    action.act();
    const absl::Time done = absl::Now();
    const std::string line =
        WaitForLine(out, {absl::StrCat("\"surface\":\"", action.surface, "\""), action.what},
                    kBound);
    EXPECT_FALSE(line.empty()) << action.surface << " block not streamed within " << kBound
                               << " of the action (" << absl::Now() - done << ")\n"
                               << ReadAll(out) << "\nlog:\n" << ReadAll(decisions());
    const size_t at = line.find("\"ref\":\"");
    if (at != std::string::npos) refs.push_back(line.substr(at + 7, 8));
  }
  ASSERT_EQ(refs.size(), 4u);
  const std::string streamed = ReadAll(out);
  EXPECT_THAT(streamed, ::testing::Not(HasSubstr("\"action\":\"allow\"")));
  EXPECT_THAT(streamed, ::testing::Not(HasSubstr("other_agents_tool")));
  for (absl::string_view line : absl::StrSplit(streamed, '\n', absl::SkipEmpty())) {
    EXPECT_THAT(std::string(line), HasSubstr(absl::StrCat("\"uid\":", agent_->uid(), ",")));
  }
  follow->Signal(SIGTERM);

  // Replay from the exec's ref: that line and the two after it, nothing before.
  auto from_ref = leash::testing::Run(LeashArgs(
      {"logs", "--ref", refs[1], "--action", "block", "--account", agent_->name(), "--json"}));
  ASSERT_TRUE(from_ref.ok());
  ASSERT_EQ(from_ref->exit_code, 0) << from_ref->out;
  EXPECT_THAT(from_ref->out, ::testing::Not(HasSubstr(refs[0])));
  for (int i = 1; i < 4; ++i) EXPECT_THAT(from_ref->out, HasSubstr(refs[i])) << i;
  EXPECT_THAT(from_ref->out, ::testing::Not(HasSubstr("before_watch")));

  // Replay from a time: the tool check's ts, in the human form.
  const std::string log = ReadAll(decisions());
  std::string tool_ts;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, refs[3])) {
      const size_t at = line.find("\"ts\":\"");
      tool_ts = std::string(line.substr(at + 6, line.find('"', at + 6) - at - 6));
    }
  }
  ASSERT_FALSE(tool_ts.empty()) << log;
  auto since = leash::testing::Run(LeashArgs(
      {"logs", "--since", tool_ts, "--account", agent_->name(), "--action", "block"}));
  ASSERT_TRUE(since.ok());
  ASSERT_EQ(since->exit_code, 0) << since->out;
  EXPECT_THAT(since->out,
              HasSubstr(absl::StrCat(agent_->name(), "  tools  BLOCK  forbidden_tool")));
  EXPECT_THAT(since->out, HasSubstr(absl::StrCat("ref=", refs[3])));
  EXPECT_THAT(since->out, ::testing::Not(HasSubstr(refs[0])));

  // A ref no line carries is an error, not an empty answer.
  auto missing = leash::testing::Run(LeashArgs({"logs", "--ref", "zzzzzzzz"}));
  ASSERT_TRUE(missing.ok());
  EXPECT_NE(missing->exit_code, 0);
  EXPECT_THAT(missing->out, HasSubstr("ref zzzzzzzz"));
}

// A watcher that stops reading (SIGSTOP) while the agent is blocked 20,000 times: the agent is
// not held up, the log file has every block, and the watcher, once it reads again, is told how
// many lines it lost.
TEST_F(LogsStreamTest, AStoppedWatcherLosesCountedLinesAndHoldsNothingUp) {
  const std::string root = fs_->path();
  const std::string out = files_->Join("stalled.txt");
  ASSERT_EQ(ToolCheck("before_watch"), 1);
  auto follow = Background::Start(
      LeashArgs({"logs", "--follow", "--account", agent_->name(), "--tail", "1"}), out);
  ASSERT_TRUE(follow.ok()) << follow.status();
  ASSERT_FALSE(WaitForLine(out, {"before_watch"}, absl::Seconds(20)).empty()) << ReadAll(out);
  ASSERT_TRUE(follow->Signal(SIGSTOP));

  constexpr int kOpens = 20000;
  RunResult r = AsAgent(absl::StrCat(
      "refused = 0\nfor i in range(", kOpens, "):\n  try:\n    open('", root,
      "/secret/key.txt').close()\n  except PermissionError:\n    refused += 1\n",
      "print('refused', refused)\n"));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("refused ", kOpens)));
  // Every block is in the file (blocks are never held back by the allow-line limit).
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = ReadAll(decisions());
        size_t count = 0;
        for (size_t at = log.find("/secret/key.txt"); at != std::string::npos;
             at = log.find("/secret/key.txt", at + 1)) {
          ++count;
        }
        return count >= static_cast<size_t>(kOpens);
      },
      absl::Seconds(30)));

  ASSERT_TRUE(follow->Signal(SIGCONT));
  EXPECT_FALSE(WaitForLine(out, {"lines not sent: this watcher did not keep up"},
                           absl::Seconds(30))
                   .empty())
      << ReadAll(out).substr(0, 2000);
  // And it is live again: a new block arrives after the loss. The feed may still hold lines
  // of the flood that the watcher, catching up, has no room for; a block that came in with
  // them is dropped for it and told like them, so the block is made again until one arrives.
  bool arrived = false;
  for (int attempt = 0; attempt < 6 && !arrived; ++attempt) {
    ASSERT_EQ(ToolCheck("after_the_stall"), 1);
    arrived = !WaitForLine(out, {"after_the_stall"}, absl::Seconds(10)).empty();
  }
  EXPECT_TRUE(arrived) << ReadAll(out).substr(0, 2000);
}

}  // namespace
}  // namespace leash::testing
