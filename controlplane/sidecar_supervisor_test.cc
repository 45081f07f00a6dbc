#include "controlplane/sidecar_supervisor.h"

#include <fcntl.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "controlplane/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using leash::testing::WaitFor;

constexpr char kSidecar[] = "controlplane/testing/test_sidecar";

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *leash::testing::TempDir::Create("sup");
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + dir_->Join("s"), grpc::InsecureServerCredentials());
    builder.RegisterService(&stream_);
    server_ = builder.BuildAndStart();
    log_fd_ = open(dir_->Join("decisions.jsonl").c_str(),
                   O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    ASSERT_GE(log_fd_, 0);
  }
  void TearDown() override {
    supervisor_.reset();
    stream_.Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    close(log_fd_);
  }
  SidecarSpec Spec(bool exit_at_once = false, const std::string& program = kSidecar,
                   bool hung_checks = true) {
    SidecarSpec spec;
    spec.name = "test-fswatch";
    spec.kind = leash::v1::SIDECAR_KIND_FSWATCH;
    spec.argv = {program, "--socket=" + dir_->Join("s"), "--kind=fswatch", "--log-fd={log_fd}"};
    if (exit_at_once) spec.argv.push_back("--exit-at-once");
    spec.decision_log_fd = log_fd_;
    spec.heartbeat_timeout = absl::Milliseconds(500);
    if (!hung_checks) {
      spec.heartbeat_timeout = absl::InfiniteDuration();
      spec.startup_grace = absl::InfiniteDuration();
    }
    return spec;
  }
  static SupervisorPolicy FastPolicy() {
    SupervisorPolicy policy;
    policy.poll_period = absl::Milliseconds(20);
    policy.respawn_backoff = absl::Milliseconds(20);
    return policy;
  }
  void MakeSupervisor(SupervisorPolicy policy = FastPolicy()) {
    policy_ = policy;
    supervisor_ = std::make_unique<SidecarSupervisor>(
        &stream_, policy,
        [this](const std::string& r) {
          absl::MutexLock lock(&mu_);
          gave_up_ = r;
        },
        fake_time_ ? static_cast<Clock&>(clock_) : Clock::Real());
  }
  // From now on the supervisor made next runs on clock_, which moves only by Tick and Advance.
  // Its sidecars' heartbeats come in real time, so these tests turn the silence checks off
  // (Spec(..., /*hung_checks=*/false)); the tests on the real clock cover them.
  void UseFakeTime() { fake_time_ = true; }
  // One monitor pass: the poll period passes on clock_, and the monitor is waiting again.
  void Tick() {
    ASSERT_TRUE(clock_.WaitForBlockedUntil(clock_.Now() + policy_.poll_period));
    clock_.Advance(policy_.poll_period);
    ASSERT_TRUE(clock_.WaitForBlockedUntil(clock_.Now() + policy_.poll_period));
  }
  // Moves clock_ by `by` while the monitor waits, then lets it make one pass.
  void Advance(absl::Duration by) {
    ASSERT_TRUE(clock_.WaitForBlockedUntil(clock_.Now() + policy_.poll_period));
    clock_.Advance(by - policy_.poll_period);
    Tick();
  }
  // Waits for `done`, a state the monitor reaches after something the kernel does (a death):
  // on the fake clock by passes of the monitor, on the real one by waiting.
  bool Until(const std::function<bool()>& done) {
    if (!fake_time_) return WaitFor(done, absl::Seconds(10));
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!done()) {
      if (absl::Now() > give_up || ::testing::Test::HasFatalFailure()) return false;
      Tick();
      absl::SleepFor(absl::Milliseconds(1));
    }
    return true;
  }
  pid_t Pid() { return supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH); }
  // Starts the sidecar from a copy of its binary under `policy`, then moves the copy away
  // (to Away()) and kills the sidecar, so every respawn fails until the copy is put back.
  // Returns the first pid, once the supervisor has reaped it.
  pid_t StartThenKillWithTheBinaryGone(SupervisorPolicy policy) {
    EXPECT_TRUE(leash::testing::RunOk({"cp", kSidecar, Program()}).ok());
    stream_.Publish({});
    MakeSupervisor(policy);
    EXPECT_TRUE(supervisor_->Start(Spec(false, Program(), /*hung_checks=*/!fake_time_)).ok());
    const pid_t first = Pid();
    EXPECT_TRUE(stream_.WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, 1, absl::Seconds(10)).ok());
    EXPECT_EQ(rename(Program().c_str(), Away().c_str()), 0);
    kill(first, SIGKILL);
    EXPECT_TRUE(Until([&] { return Pid() == 0; }));
    return first;
  }
  std::string Program() const { return dir_->Join("sidecar-copy"); }
  std::string Away() const { return Program() + ".away"; }
  std::string Log() {
    std::ifstream in(dir_->Join("decisions.jsonl"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string GaveUp() {
    absl::MutexLock lock(&mu_);
    return gave_up_;
  }

  std::unique_ptr<leash::testing::TempDir> dir_;
  policystream::PolicyStreamService stream_;
  std::unique_ptr<grpc::Server> server_;
  int log_fd_ = -1;
  bool fake_time_ = false;
  testing::FakeClock clock_;
  SupervisorPolicy policy_;
  std::unique_ptr<SidecarSupervisor> supervisor_;
  absl::Mutex mu_;
  std::string gave_up_;
};

TEST_F(SupervisorTest, InheritedDescriptorsReachTheChildAtTheirNumbers) {
  int first[2], second[2];
  ASSERT_EQ(pipe2(first, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(second, O_CLOEXEC), 0);
  SidecarSpec spec = Spec();
  // The second pipe's write end is handed down as inherited descriptor 1: the child writes to
  // the number "{fd:1}" names, and the bytes come out of that pipe, not the first.
  spec.argv = {"/bin/sh", "-c", "echo one >&{fd:0}; echo two >&{fd:1}; exec sleep 30"};
  spec.inherited_fds = {first[1], second[1]};
  stream_.Publish({});
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(spec).ok());
  close(first[1]);
  close(second[1]);
  char buffer[16] = {};
  ASSERT_EQ(read(first[0], buffer, sizeof buffer), 4);
  EXPECT_EQ(std::string(buffer, 4), "one\n");
  ASSERT_EQ(read(second[0], buffer, sizeof buffer), 4);
  EXPECT_EQ(std::string(buffer, 4), "two\n");
  EXPECT_EQ(SidecarInheritedFd(0), 4);
  supervisor_.reset();
  close(first[0]);
  close(second[0]);
}

SidecarSpec WithStandby(SidecarSpec spec, bool ready = true) {
  spec.standby_args = {"--standby"};
  if (ready) spec.standby_args.push_back("--ready-fd={ready_fd}");
  spec.takeover_signal = SIGUSR1;
  return spec;
}

// The watcher's way: a second process stands by, and takes over when the first dies or goes
// silent; a new standby follows once the new one is connected.
TEST_F(SupervisorTest, AStandbyTakesOverFromADeadOrSilentSidecarAndIsReplaced) {
  stream_.Publish({});
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(WithStandby(Spec())).ok());
  const auto kind = leash::v1::SIDECAR_KIND_FSWATCH;
  for (const int fault : {SIGKILL, SIGSTOP}) {
    SCOPED_TRACE(fault);
    const pid_t reader = supervisor_->PidOf(kind);
    pid_t standby = 0;
    ASSERT_TRUE(WaitFor([&] { return (standby = supervisor_->ReadyStandbyOf(kind)) != 0; },
                        absl::Seconds(10)));
    ASSERT_NE(standby, reader);
    ASSERT_EQ(kill(reader, fault), 0);
    ASSERT_TRUE(WaitFor([&] { return supervisor_->PidOf(kind) == standby; }, absl::Seconds(10)));
    // It subscribes only once told: its hello replaces the dead one's stream.
    ASSERT_TRUE(WaitFor([&] { return stream_.State(kind).pid == static_cast<uint32_t>(standby); },
                        absl::Seconds(10)));
    ASSERT_TRUE(WaitFor(
        [&] {
          const pid_t next = supervisor_->ReadyStandbyOf(kind);
          return next != 0 && next != standby;
        },
        absl::Seconds(10)));
    EXPECT_EQ(kill(reader, 0), -1) << "the old one still runs";
  }
  EXPECT_EQ(GaveUp(), "");
  EXPECT_EQ(supervisor_->Status()[0].restarts(), 2u);
}

// A leashd that took over a group another reader reads meanwhile (its holding reader): the
// first process is a standby, handed the sidecar only after `before_first_takeover` returns, so
// that two readers never overlap; it is one start, not a restart, and a standby follows.
TEST_F(SupervisorTest, TheFirstProcessStartsAsAStandbyHandedTheSidecarAfterTheHookReturns) {
  stream_.Publish({});
  MakeSupervisor();
  const auto kind = leash::v1::SIDECAR_KIND_FSWATCH;
  std::atomic<int> hooks{0};
  std::atomic<uint32_t> subscribed_at_hook{1};
  SidecarSpec spec = WithStandby(Spec());
  spec.first_as_standby = true;
  spec.before_first_takeover = [&] {
    hooks.fetch_add(1);
    subscribed_at_hook.store(stream_.State(kind).pid);
  };
  ASSERT_TRUE(supervisor_->Start(spec).ok());
  // Nobody is the sidecar until the standby is ready and the hook has run.
  EXPECT_EQ(supervisor_->PidOf(kind), 0);
  ASSERT_TRUE(WaitFor([&] { return supervisor_->PidOf(kind) != 0; }, absl::Seconds(10)));
  const pid_t first = supervisor_->PidOf(kind);
  EXPECT_EQ(hooks.load(), 1);
  // The standby subscribes only once told: at the hook nobody had.
  EXPECT_EQ(subscribed_at_hook.load(), 0u);
  ASSERT_TRUE(stream_.WaitForAck(kind, 1, absl::Seconds(10)).ok());
  EXPECT_EQ(stream_.State(kind).pid, static_cast<uint32_t>(first));
  ASSERT_TRUE(WaitFor(
      [&] {
        const pid_t next = supervisor_->ReadyStandbyOf(kind);
        return next != 0 && next != first;
      },
      absl::Seconds(10)));
  EXPECT_EQ(hooks.load(), 1);
  EXPECT_EQ(GaveUp(), "");
  EXPECT_EQ(supervisor_->Status()[0].restarts(), 0u);
}

// Nothing is spawned while nobody reads (a watcher's exec would wait on its own group): with no
// ready standby the supervisor gives up.
TEST_F(SupervisorTest, WithNoReadyStandbyASidecarThatDiesMakesTheSupervisorGiveUp) {
  stream_.Publish({});
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(WithStandby(Spec(), /*ready=*/false)).ok());
  const auto kind = leash::v1::SIDECAR_KIND_FSWATCH;
  const pid_t reader = supervisor_->PidOf(kind);
  ASSERT_TRUE(stream_.WaitForAck(kind, 1, absl::Seconds(10)).ok());
  absl::SleepFor(absl::Milliseconds(300));  // a standby is spawned, and never says it is ready
  ASSERT_EQ(kill(reader, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !GaveUp().empty(); }, absl::Seconds(10)));
  EXPECT_THAT(GaveUp(), ::testing::HasSubstr("no standby was ready to take over"));
  EXPECT_EQ(supervisor_->PidOf(kind), 0);
}

TEST_F(SupervisorTest, SidecarInheritsTheDecisionLogAndGetsTheMap) {
  stream_.Publish({});
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(Spec()).ok());
  const pid_t pid = supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(stream_.WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, 1, absl::Seconds(10)).ok());
  EXPECT_THAT(Log(), ::testing::HasSubstr("{\"started\":" + std::to_string(pid) + "}"));
}

TEST_F(SupervisorTest, DeadSidecarIsRespawnedFromTheCurrentMap) {
  stream_.Publish({});
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(Spec()).ok());
  const pid_t first = supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH);
  ASSERT_TRUE(stream_.WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, 1, absl::Seconds(10)).ok());
  const uint64_t v2 = stream_.Publish({});
  kill(first, SIGKILL);
  ASSERT_TRUE(WaitFor(
      [&] {
        const pid_t now = supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH);
        return now > 0 && now != first;
      },
      absl::Seconds(10)));
  ASSERT_TRUE(stream_.WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v2, absl::Seconds(10)).ok());
  EXPECT_EQ(stream_.State(leash::v1::SIDECAR_KIND_FSWATCH).pid,
            static_cast<uint32_t>(supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH)));
  EXPECT_EQ(supervisor_->Status()[0].restarts(), 1u);
}

TEST_F(SupervisorTest, StoppedSidecarIsKilledOnAMissedHeartbeatAndRespawned) {
  stream_.Publish({});
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(Spec()).ok());
  const pid_t first = supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH);
  ASSERT_TRUE(stream_.WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, 1, absl::Seconds(10)).ok());
  kill(first, SIGSTOP);
  ASSERT_TRUE(WaitFor(
      [&] {
        const pid_t now = supervisor_->PidOf(leash::v1::SIDECAR_KIND_FSWATCH);
        return now > 0 && now != first;
      },
      absl::Seconds(10)));
  // The stopped process is gone (killed and reaped), not left behind.
  EXPECT_NE(kill(first, 0), 0);
}

TEST_F(SupervisorTest, GivesUpAfterMoreThanThreeDeathsInTheWindow) {
  MakeSupervisor();
  ASSERT_TRUE(supervisor_->Start(Spec(/*exit_at_once=*/true)).ok());
  ASSERT_TRUE(WaitFor([&] { return !GaveUp().empty(); }, absl::Seconds(10)));
  EXPECT_THAT(GaveUp(), ::testing::HasSubstr("died 4 times"));
  EXPECT_THAT(GaveUp(), ::testing::HasSubstr("giving up on the sidecars"));
  EXPECT_EQ(supervisor_->Status()[0].restarts(), 3u);
}

// A respawn that fails (the binary gone for a moment, a pids limit) used to leave the sidecar
// down for good: nothing tried again, and nothing counted towards giving up.
TEST_F(SupervisorTest, ARespawnThatFailsIsTriedAgainOnTheNextPass) {
  UseFakeTime();
  SupervisorPolicy policy = FastPolicy();
  policy.max_deaths = 1000000;  // this test is about the retry, not the give-up
  const pid_t first = StartThenKillWithTheBinaryGone(policy);
  // Several passes whose spawn fails, each after the backoff of the one before (20, 40, 80 ms).
  Advance(absl::Milliseconds(200));
  EXPECT_EQ(Pid(), 0);
  ASSERT_EQ(rename(Away().c_str(), Program().c_str()), 0);
  ASSERT_TRUE(Until([&] { return Pid() > 0; }));
  EXPECT_NE(Pid(), first);
  EXPECT_TRUE(GaveUp().empty());
}

// A failed spawn is not tried again before its backoff: the binary coming back does not bring
// the sidecar back, and nothing more counts towards giving up, until the backoff is over.
TEST_F(SupervisorTest, AFailedSpawnWaitsForItsBackoff) {
  UseFakeTime();
  SupervisorPolicy policy = FastPolicy();
  policy.respawn_backoff = absl::Minutes(10);
  StartThenKillWithTheBinaryGone(policy);  // the first respawn has failed on that pass
  ASSERT_EQ(rename(Away().c_str(), Program().c_str()), 0);
  for (int pass = 0; pass < 50; ++pass) Tick();
  Advance(absl::Minutes(9));
  EXPECT_EQ(Pid(), 0);
  EXPECT_TRUE(GaveUp().empty());
  Advance(absl::Minutes(1));
  EXPECT_GT(Pid(), 0);
  EXPECT_TRUE(GaveUp().empty());
}

TEST_F(SupervisorTest, RespawnsThatKeepFailingCountTowardsGivingUp) {
  StartThenKillWithTheBinaryGone(FastPolicy());
  // One death and three failed spawns: more than 3 in the window.
  ASSERT_TRUE(WaitFor([&] { return !GaveUp().empty(); }, absl::Seconds(10)));
  EXPECT_THAT(GaveUp(), ::testing::HasSubstr("died 4 times"));
  EXPECT_EQ(supervisor_->Status()[0].restarts(), 0u);
}

// "More than 3 deaths in 10 minutes": deaths older than the window do not count. Five deaths,
// each after the previous one has left the window, never make it give up; four within it do.
TEST_F(SupervisorTest, DeathsOlderThanTheWindowAreForgotten) {
  UseFakeTime();
  stream_.Publish({});
  SupervisorPolicy policy = FastPolicy();
  policy.window = absl::Minutes(10);
  MakeSupervisor(policy);
  ASSERT_TRUE(supervisor_->Start(Spec(false, kSidecar, /*hung_checks=*/false)).ok());
  auto die_and_come_back = [&] {
    const pid_t pid = Pid();
    ASSERT_GT(pid, 0);
    kill(pid, SIGKILL);
    ASSERT_TRUE(Until([&] { return Pid() > 0 && Pid() != pid; }));
  };
  for (int death = 1; death <= 5; ++death) {
    die_and_come_back();
    Advance(absl::Minutes(10) + absl::Seconds(1));
  }
  EXPECT_TRUE(GaveUp().empty()) << GaveUp();
  EXPECT_EQ(supervisor_->Status()[0].restarts(), 5u);
  for (int death = 1; death <= 3; ++death) die_and_come_back();
  EXPECT_TRUE(GaveUp().empty()) << GaveUp();
  kill(Pid(), SIGKILL);
  ASSERT_TRUE(Until([&] { return !GaveUp().empty(); }));
  EXPECT_THAT(GaveUp(), ::testing::HasSubstr("died 4 times in 10m"));
}

}  // namespace
}  // namespace leash::controlplane
