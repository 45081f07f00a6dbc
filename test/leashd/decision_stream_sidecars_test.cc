// The decision stream under load with the real processes: leashd, leash-fswatch and leash-proxy,
// an agent account making 10,000 decisions a second for 10 s across both sidecars (opens of a
// denied file on the marked tmpfs, connections to a denied address through the proxy), and two
// watchers of Control.WatchDecisions that do not keep up: one reads nothing from its live mark
// until the agent is done, the other never again. What must hold is correctness, not speed
// (the speed is decision_stream_sidecars_benchmark's): every open and connection of the agent
// is answered while the watchers are stalled (the sidecars never wait on leashd or a watcher),
// the log file has every block line (the durable record), the stalled watcher lost lines and
// was told how many, and what it received and was told it lost add up to every line leashd
// was sent.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/agent_fixture.h"
#include "test/leashd/leashd_fixture.h"
#include "test/leashd/stalled_watcher.h"

namespace leash::testing {
namespace {

constexpr int kOpensPerSecond = 5000;
constexpr int kConnectsPerSecond = 5000;
constexpr int kSeconds = 10;

// The agent's summary line as fields.
std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> fields;
  for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(word, absl::MaxSplits('=', 1));
    fields[kv.first] = kv.second;
  }
  return fields;
}

long Number(const std::map<std::string, std::string>& fields, const std::string& key) {
  long value = -1;
  auto it = fields.find(key);
  if (it == fields.end() || !absl::SimpleAtoi(it->second, &value)) return -1;
  return value;
}

// What a stretch of the decision log holds.
struct LogCount {
  size_t lines = 0;
  size_t open_blocks = 0;     // the agent's filesystem blocks of the denied file
  size_t connect_blocks = 0;  // the agent's network blocks
  // Lines the writers said they did not send to leashd ("decision stream: N lines not
  // sent"), and records they lost before the log ("decision log: N records lost").
  uint64_t feed_dropped = 0;
  uint64_t lost = 0;
};

uint64_t LeadingNumber(absl::string_view line, absl::string_view after) {
  const size_t at = line.find(after);
  if (at == absl::string_view::npos) return 0;
  absl::string_view rest = line.substr(at + after.size());
  rest = rest.substr(0, rest.find(' '));
  uint64_t n = 0;
  return absl::SimpleAtoi(rest, &n) ? n : 0;
}

LogCount Count(absl::string_view text, uint32_t uid, const std::string& denied_file) {
  LogCount count;
  const std::string own = absl::StrCat("\"uid\":", uid, ",");
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++count.lines;
    const bool block = absl::StrContains(line, "\"action\":\"block\"");
    if (block && absl::StrContains(line, own)) {
      if (absl::StrContains(line, "\"surface\":\"filesystem\"") &&
          absl::StrContains(line, denied_file)) {
        ++count.open_blocks;
      } else if (absl::StrContains(line, "\"surface\":\"network\"")) {
        ++count.connect_blocks;
      }
    }
    if (absl::StrContains(line, "lines not sent to leashd")) {
      count.feed_dropped += LeadingNumber(line, "decision stream: ");
    }
    if (absl::StrContains(line, "records lost because the queue was full")) {
      count.lost += LeadingNumber(line, "decision log: ");
    }
  }
  return count;
}

class DecisionStreamSidecarsTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("ldl", {"leash-ldl"}, "ldload"));
    ASSERT_NO_FATAL_FAILURE(MakeTree({"/secret"}, {"/secret/key.txt"}, {}));
    const std::string& root = fs_->path();
    denied_ = root + "/secret/key.txt";
    // A copy the agent can run (the runfiles tree may sit under a folder only its owner may
    // enter), outside the marked tmpfs.
    agent_binary_ = files_->Join("decision_load_agent");
    ASSERT_TRUE(RunOk({"cp", RunfilePath("test/leashd/decision_load_agent"), agent_binary_}).ok());
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"192.0.2.99/32\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/secret\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n"))));
  }

  // Waits until the decision log has not grown for `quiet`; its size then.
  size_t SettledLogSize(absl::Duration quiet, absl::Duration timeout) {
    size_t size = LogSize();
    absl::Time same_since = absl::Now();
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(100));
      const size_t now = LogSize();
      if (now != size) {
        size = now;
        same_since = absl::Now();
      } else if (absl::Now() - same_since >= quiet) {
        break;
      }
    }
    return size;
  }

  std::string denied_, agent_binary_;
};

TEST_F(DecisionStreamSidecarsTest, BothSidecarsAnswerEveryDecisionWhileWatchersStallAndDropsAreCounted) {
  // Nothing in flight to leashd before the watchers subscribe: from here on, every line of the
  // log was written while they were subscribed.
  SettledLogSize(absl::Seconds(1), absl::Seconds(20));
  auto slow = StalledWatcher::Start(leashd_->admin_socket());
  ASSERT_TRUE(slow.ok()) << slow.status();
  auto never = StalledWatcher::Start(leashd_->admin_socket());
  ASSERT_TRUE(never.ok()) << never.status();
  const size_t from = LogSize();

  // The agent, both watchers stalled the whole time.
  auto run = leash::testing::Run(ns_->ExecSharingMounts(agent_->AsUser(
                     {agent_binary_, "--open=" + denied_,
                      absl::StrCat("--open-rate=", kOpensPerSecond), "--connect=192.0.2.11",
                      "--ports=8000-8099", absl::StrCat("--connect-rate=", kConnectsPerSecond),
                      "--connect-threads=16", absl::StrCat("--seconds=", kSeconds)})),
                 absl::Seconds(120));
  ASSERT_TRUE(run.ok()) << run.status() << "\n" << leashd_->Log();
  ASSERT_EQ(run->exit_code, 0) << run->out;
  const std::map<std::string, std::string> agent = Fields(run->out);
  const long opens = int64_t{kOpensPerSecond} * kSeconds;
  const long connects = int64_t{kConnectsPerSecond} * kSeconds;
  // Every open was refused (the watcher answered it), every connection reset by the proxy
  // (judged and answered), none left unanswered after 10 s.
  EXPECT_EQ(Number(agent, "opens"), opens) << run->out;
  EXPECT_EQ(Number(agent, "refused"), opens) << run->out;
  EXPECT_EQ(Number(agent, "connects"), connects) << run->out;
  EXPECT_EQ(Number(agent, "reset") + Number(agent, "eof"), connects) << run->out;
  EXPECT_EQ(Number(agent, "unanswered"), 0) << run->out;
  EXPECT_EQ(Number(agent, "connect_failed"), 0) << run->out;
  // Answers kept flowing: no single answer waited anywhere near the whole run (an open never
  // answered would have held the agent until the timeout above).
  EXPECT_LT(Number(agent, "open_max_us"), 5'000'000) << run->out;
  EXPECT_LT(Number(agent, "connect_max_us"), 5'000'000) << run->out;
  std::printf("agent: %s", run->out.c_str());

  // The log has every block line (the writers' final reports of stream drops come within a
  // second, so the file is read once it has settled).
  SettledLogSize(absl::Seconds(2), absl::Seconds(60));
  const LogCount logged = Count(ReadAll(decisions()).substr(from), agent_->uid(), denied_);
  EXPECT_EQ(logged.open_blocks, static_cast<size_t>(opens));
  EXPECT_EQ(logged.connect_blocks, static_cast<size_t>(connects));
  EXPECT_EQ(logged.lost, 0u);

  // The slow watcher reads again: what it receives and what it is told it lost are every line
  // leashd was sent while it was subscribed (the log's lines, less those a writer did not send
  // and counted).
  const uint64_t sent_to_leashd = logged.lines - logged.feed_dropped;
  (*slow)->Resume();
  WaitFor([&] { return (*slow)->lines() + (*slow)->told_dropped() >= sent_to_leashd; },
          absl::Seconds(60));
  // Nothing more arrives after that (no line counted twice).
  WaitFor([&] { return (*slow)->quiet_us() > 1'000'000; }, absl::Seconds(30));
  std::printf("log lines %zu (writers' stream drops %llu); slow watcher: %llu lines, told "
              "%llu dropped\n",
              logged.lines, static_cast<unsigned long long>(logged.feed_dropped),
              static_cast<unsigned long long>((*slow)->lines()),
              static_cast<unsigned long long>((*slow)->told_dropped()));
  EXPECT_EQ((*slow)->lines() + (*slow)->told_dropped(), sent_to_leashd);
  EXPECT_GT((*slow)->told_dropped(), 0u);
  EXPECT_GT((*slow)->lines(), 0u);

  // Still live: a new decision reaches the watcher that caught up.
  const uint64_t before = (*slow)->lines();
  auto one = leash::testing::Run(ns_->ExecSharingMounts(agent_->AsUser(
                     {agent_binary_, "--open=" + denied_, "--open-rate=1", "--seconds=1"})),
                 absl::Seconds(30));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(WaitFor([&] { return (*slow)->lines() > before; }, absl::Seconds(10)));
}

}  // namespace
}  // namespace leash::testing
