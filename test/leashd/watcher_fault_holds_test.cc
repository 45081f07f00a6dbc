// Faults of the watcher that no failure may turn into an open: each test runs an agent opening
// a file its policy denies in a tight loop (test/fswatch:probe storm-for: one open() after
// another, no exec) while the fault is injected, and counts the opens that succeeded. Every
// count must be 0: a failure never un-confines (fswatch/README.md, "A dead or stalled watcher"
// and "After leashd gives up"). The counts are printed for docs/PERFORMANCE.md.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fswatch/harness.h"
#include "test/leashd/agent_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// What one storm of the agent's opens of the denied file came to.
struct Storm {
  long attempts = -1;  // -1: the probe printed nothing
  long succeeded = -1;
};

Storm ParseStorm(const std::string& out) {
  Storm storm;
  const std::vector<std::string> words =
      absl::StrSplit(absl::StripAsciiWhitespace(out), ' ');
  if (words.size() == 4 && words[0] == "ok") {
    if (!absl::SimpleAtoi(words[1], &storm.attempts) ||
        !absl::SimpleAtoi(words[3], &storm.succeeded)) {
      storm = Storm();
    }
  }
  return storm;
}

// The pid in "<prefix><pid><suffix>" lines of `log`: the last one that is not `not_this`.
pid_t LastPidIn(const std::string& log, const std::string& prefix, const std::string& suffix,
                pid_t not_this = 0) {
  pid_t found = 0;
  for (size_t at = log.find(prefix); at != std::string::npos; at = log.find(prefix, at + 1)) {
    const size_t digits = at + prefix.size();
    const size_t close = log.find(suffix, digits);
    pid_t pid = 0;
    if (close != std::string::npos && close - digits < 10 &&
        absl::SimpleAtoi(log.substr(digits, close - digits), &pid) && pid != not_this) {
      found = pid;
    }
  }
  return found;
}

class WatcherFaultHoldsTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("lwh", {"leash-lwh"}, "lwhold"));
    ASSERT_NO_FATAL_FAILURE(MakeTree({"/secret"}, {"/secret/x", "/open.txt"}, {}));
    auto probe = ProbeDir::Create();
    ASSERT_TRUE(probe.ok()) << probe.status();
    probe_ = *std::move(probe);
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", fs_->path(), "/secret\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n"))));
    ASSERT_NE(WaitForStandby(), 0) << leashd_->Log();
    // Enforced before any fault: the agent's open of the denied file fails, of the other not.
    ASSERT_EQ(AgentOpens("/secret/x"), "EPERM") << leashd_->Log();
    ASSERT_EQ(AgentOpens("/open.txt"), "OPENED") << leashd_->Log();
  }

  std::string secret() const { return fs_->path() + "/secret/x"; }

  // One open by the agent through the probe: "OPENED", "EPERM" (the watcher's denial), or
  // what else the probe said.
  std::string AgentOpens(const std::string& relative) {
    auto run = leash::testing::Run(
        agent_->AsUser({probe_->probe(), "open", fs_->path() + relative}), absl::Seconds(30));
    if (!run.ok()) return std::string(run.status().message());
    const std::string said(absl::StripAsciiWhitespace(run->out));
    if (run->exit_code == 0 && said == "ok") return "OPENED";
    return said == "errno=1" ? "EPERM" : said;
  }

  // The agent opening the denied file in a tight loop for `ms`, in the background.
  Background StartStorm(int ms, const std::string& name) {
    storm_out_ = files_->Join(name);
    auto storm = Background::Start(
        agent_->AsUser({probe_->probe(), "storm-for", secret(), std::to_string(ms)}), storm_out_);
    EXPECT_TRUE(storm.ok()) << storm.status();
    return storm.ok() ? *std::move(storm) : Background::Start({"true"}).value();
  }
  // Waits for the storm to end; its counts, printed for docs/PERFORMANCE.md.
  Storm EndStorm(Background& storm, const std::string& fault) {
    EXPECT_TRUE(storm.Wait(absl::Seconds(120)).ok()) << "the agent's loop hung";
    const Storm counted = ParseStorm(ReadAll(storm_out_));
    printf("FAULT %s: %ld denied opens tried, %ld succeeded\n", fault.c_str(), counted.attempts,
           counted.succeeded);
    fflush(stdout);
    EXPECT_GT(counted.attempts, 0) << ReadAll(storm_out_);
    return counted;
  }

  // The reading watcher's pid as leashd reports it (0: none).
  pid_t WatcherPid() {
    auto status = leashd_->Status();
    if (!status.ok()) return 0;
    for (const auto& sidecar : status->sidecars()) {
      if (sidecar.name() == "leash-fswatch" && sidecar.running()) {
        return static_cast<pid_t>(sidecar.pid());
      }
    }
    return 0;
  }
  // Waits for a reading watcher other than `old` with the current map in force.
  pid_t WaitForWatcherInForce(pid_t old) {
    pid_t now = 0;
    WaitFor(
        [&] {
          auto status = leashd_->Status();
          if (!status.ok()) return false;
          for (const auto& sidecar : status->sidecars()) {
            if (sidecar.name() == "leash-fswatch" && sidecar.running() &&
                static_cast<pid_t>(sidecar.pid()) != old &&
                sidecar.acked_version() >= status->map_version() && sidecar.acked_version() > 0) {
              now = static_cast<pid_t>(sidecar.pid());
              return true;
            }
          }
          return false;
        },
        absl::Seconds(60));
    return now;
  }
  // The pid of the last standby leashd says is ready, other than `not_this` (0 after 60 s).
  pid_t WaitForStandby(pid_t not_this = 0) {
    pid_t ready = 0;
    WaitFor(
        [&] {
          ready = LastPidIn(leashd_->Log(), "leash-fswatch standby (pid ", ") ready", not_this);
          return ready != 0;
        },
        absl::Seconds(60));
    return ready;
  }

  std::unique_ptr<ProbeDir> probe_;
  std::string storm_out_;
};

// Two SIGKILLs of the watcher close together: the second lands on the standby that has just
// taken over, before any new standby is ready. leashd gives up on the watcher, and the group
// stays held: every event of the agent is denied from then on, none allowed.
TEST_F(WatcherFaultHoldsTest, TwoKillsCloseTogetherLetNoDeniedOpenThrough) {
  const pid_t reader = WatcherPid();
  const pid_t standby = WaitForStandby();
  ASSERT_NE(reader, 0);
  ASSERT_NE(standby, 0);
  Background storm = StartStorm(5000, "two-kills.out");
  // The storm runs before the first kill: its first opens are judged by the reader.
  ASSERT_TRUE(WaitFor([&] { return AgentOpens("/secret/x") == "EPERM"; }, absl::Seconds(5)));
  ASSERT_EQ(kill(reader, SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] { return absl::StrContains(leashd_->Log(), "handed leash-fswatch to its standby"); },
      absl::Seconds(30)))
      << leashd_->Log();
  ASSERT_EQ(kill(standby, SIGKILL), 0);
  const Storm counted = EndStorm(storm, "two SIGKILLs of the watcher close together");
  EXPECT_EQ(counted.succeeded, 0) << leashd_->Log();
  // After the fault the agent is still refused, and a process that is no subject (root, here)
  // is not held: the host goes on.
  EXPECT_EQ(AgentOpens("/secret/x"), "EPERM") << leashd_->Log();
  auto root_open = leash::testing::Run({"cat", fs_->path() + "/open.txt"}, absl::Seconds(30));
  ASSERT_TRUE(root_open.ok());
  EXPECT_EQ(root_open->exit_code, 0) << root_open->out << leashd_->Log();
}

// The watcher's fourth death in ten minutes: leashd gives up on it, keeps the group and
// answers every event of a subject deny itself; no denied open of the agent succeeds.
TEST_F(WatcherFaultHoldsTest, GiveUpAfterTheFourthDeathKeepsTheGroupAndDeniesEverySubject) {
  pid_t watcher = WatcherPid();
  ASSERT_NE(watcher, 0);
  Storm counted;
  for (int death = 1; death <= 4; ++death) {
    // Each kill lands on a reader with a standby ready, so each is one takeover and one death.
    ASSERT_TRUE(WaitFor([&] { return leashd_->StandbysReady() >= death; }, absl::Seconds(60)))
        << "death " << death << "\n" << leashd_->Log();
    if (death < 4) {
      ASSERT_EQ(kill(watcher, SIGKILL), 0);
      const pid_t next = WaitForWatcherInForce(watcher);
      ASSERT_NE(next, 0) << "death " << death << "\n" << leashd_->Log();
      watcher = next;
      continue;
    }
    Background storm = StartStorm(4000, "give-up.out");
    ASSERT_TRUE(WaitFor([&] { return AgentOpens("/secret/x") == "EPERM"; }, absl::Seconds(5)));
    ASSERT_EQ(kill(watcher, SIGKILL), 0);
    counted = EndStorm(storm, "the give-up after the watcher's fourth death");
  }
  EXPECT_THAT(leashd_->Log(), HasSubstr("leash-fswatch died 4 times in 10m"));
  EXPECT_EQ(counted.succeeded, 0) << leashd_->Log();
  EXPECT_EQ(AgentOpens("/secret/x"), "EPERM") << leashd_->Log();
  auto root_open = leash::testing::Run({"cat", fs_->path() + "/open.txt"}, absl::Seconds(30));
  ASSERT_TRUE(root_open.ok());
  EXPECT_EQ(root_open->exit_code, 0) << root_open->out << leashd_->Log();
}

// leashd alone SIGKILLed (its watchers live on, holding the group), then started again: the
// new leashd takes over the group its predecessor's watchers hold instead of stopping them
// first, so the marks never go and no denied open of the agent succeeds across the restart.
TEST_F(WatcherFaultHoldsTest, LeashdSigkilledAndRestartedLetsNoDeniedOpenThrough) {
  const pid_t old_reader = WatcherPid();
  ASSERT_NE(old_reader, 0);
  ASSERT_EQ(kill(leashd_->pid(), SIGKILL), 0);
  leashd_->WaitForExit(absl::Seconds(20)).IgnoreError();
  Background storm = StartStorm(15000, "leashd-restart.out");
  ASSERT_TRUE(WaitFor([&] { return AgentOpens("/secret/x") == "EPERM"; }, absl::Seconds(5)));
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  const pid_t fresh = WaitForWatcherInForce(old_reader);
  ASSERT_NE(fresh, 0) << leashd_->Log();
  // The restart happened inside the storm (else the count says nothing).
  ASSERT_TRUE(storm.Running()) << "the storm ended before the new watcher was in force";
  const Storm counted = EndStorm(storm, "leashd SIGKILLed and started again");
  EXPECT_EQ(counted.succeeded, 0) << leashd_->Log();
  EXPECT_EQ(AgentOpens("/secret/x"), "EPERM") << leashd_->Log();
  EXPECT_EQ(AgentOpens("/open.txt"), "OPENED") << leashd_->Log();
}

// A standby that stood by for longer than the watchdog's 10 s limit takes over and goes on
// reading: its watchdog counts from its first pass, not from when it was made, so one kill is
// one death (not a takeover followed at once by a watchdog exit).
TEST_F(WatcherFaultHoldsTest, AStandbyThatStoodByLongTakesOverWithoutItsWatchdogFiring) {
  const pid_t reader = WatcherPid();
  const pid_t standby = WaitForStandby();
  ASSERT_NE(reader, 0);
  ASSERT_NE(standby, 0);
  // The fault's condition is the standby's age: past the watchdog's limit.
  absl::SleepFor(absl::Seconds(12));
  ASSERT_EQ(kill(reader, SIGKILL), 0);
  ASSERT_EQ(WaitForWatcherInForce(reader), standby) << leashd_->Log();
  // The next standby is spawned once the new reader has acked; by the time it is ready, a
  // watchdog that fired on the takeover (its first check, a quarter second into the loop) has
  // said so in the log the watcher's stderr goes to.
  ASSERT_NE(WaitForStandby(standby), 0) << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), Not(HasSubstr("watchdog: the event loop made no pass")));
  EXPECT_EQ(WatcherPid(), standby) << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), Not(HasSubstr(absl::StrCat("leash-fswatch (pid ", standby,
                                                          ") exited with status 5"))));
  EXPECT_EQ(AgentOpens("/secret/x"), "EPERM") << leashd_->Log();
}

}  // namespace
}  // namespace leash::testing
