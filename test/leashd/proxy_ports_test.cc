// The proxy's ports are leashd's from start to stop: the real leashd, its real sidecars and nft
// rules in a network namespace, real leash-* accounts, and a squatter — another account binding
// every port of the range on 127.0.0.1, 127.0.0.2, 0.0.0.0, ::1, :: and ::ffff:127.0.0.1 with
// SO_REUSEADDR and SO_REUSEPORT in a tight loop — while the proxy is SIGKILLed and respawned,
// while a new subject is onboarded, and across a leashd restart. Every subject's connection is
// then checked to be judged by its listener (accepted, decided and logged), not refused.
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/fake_notify_socket.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;

int64_t MonotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// What a squatter loop printed.
struct LoopResult {
  std::vector<int64_t> wins;  // CLOCK_MONOTONIC ns of each bind that succeeded
  std::vector<std::string> won_lines;
  uint64_t attempts = 0;
  uint64_t rounds = 0;
  bool finished = false;
};

LoopResult ParseLoop(const std::string& text) {
  LoopResult result;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "won ")) {
      result.won_lines.emplace_back(line);
      const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
      int64_t at = 0;
      if (fields.size() == 3 && absl::SimpleAtoi(fields[2], &at)) result.wins.push_back(at);
    } else if (absl::StartsWith(line, "attempts=")) {
      result.finished = true;
      for (absl::string_view field : absl::StrSplit(line, ' ')) {
        std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
        if (kv.first == "attempts") (void)absl::SimpleAtoi(kv.second, &result.attempts);
        if (kv.first == "rounds") (void)absl::SimpleAtoi(kv.second, &result.rounds);
      }
    }
  }
  return result;
}

class ProxyPortsTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    // Somewhere a subject's TCP can be aimed at, for each family the redirect handles.
    ASSERT_TRUE(ns_->AddVethPair({"192.0.2.10/24", "2001:db8::10/64"},
                                 {"192.0.2.11/24", "2001:db8::11/64"})
                    .ok());
    ASSERT_NE(MountTmpfs(), nullptr);
    tag_ = RunTag();
    // Not leashed: its own TCP is not redirected, and nothing stops it binding. Made before
    // the view, so leashd sees it only as one more host account.
    squatter_ = AddAccount("lpp" + tag_ + "s");
    ASSERT_NE(squatter_, nullptr);
    // leashd sees this test's accounts only, not other runs' agents.
    ASSERT_NE(MakeAccountView(), nullptr);
    user_ = AddAccount("lpp" + tag_ + "u");
    ASSERT_NE(user_, nullptr);
    ASSERT_NE(MakeFiles("lpp"), nullptr);
  }

  void TearDown() override {
    for (Background& loop : loops_) {
      loop.Signal(SIGTERM);
      loop.Wait(absl::Seconds(5)).IgnoreError();
    }
  }

  void AddAgent(const std::string& suffix) {
    const TestAccount* agent = AddAccount(absl::StrCat("leash-pp", tag_, suffix));
    ASSERT_NE(agent, nullptr);
    agents_[suffix] = agent;
    // A running leashd learns of it as of a useradd on the host.
    if (leashd_ != nullptr && !leashd_->stopped()) {
      ASSERT_TRUE(leashd_->PublishAccounts().ok());
    } else if (leashd_ != nullptr) {
      // Stopped: nothing has the view mounted, so its files are written for the next start.
      ASSERT_TRUE(view_->Wrap({}).ok());
    }
  }

  void StartLeashd() {
    const std::string floor = absl::StrCat(
        "user: ", user_->name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", fs_->path(), "/secret\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [] }\n",
        "tools: { mode: whitelist, allow: [], deny: [] }\n",
        "logging: { level: info, decisions: ", files_->Join("decisions.jsonl"), " }\n");
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path(), {}, view_.get());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  std::map<std::string, leash::v1::SubjectStatus> Subjects() {
    std::map<std::string, leash::v1::SubjectStatus> out;
    auto status = leashd_->Status();
    if (!status.ok()) return out;
    for (const auto& s : status->subjects()) out[s.account()] = s;
    return out;
  }

  // Waits until each of this test's agents is enforced with the proxy's ack of the current map.
  void WaitForAgentsEnforced() {
    bool done = WaitFor(
        [&] {
          auto status = leashd_->Status();
          if (!status.ok()) return false;
          std::map<std::string, std::string> state;
          for (const auto& s : status->subjects()) state[s.account()] = s.state();
          for (const auto& [suffix, agent] : agents_) {
            if (state[agent->name()] != "enforced") return false;
          }
          for (const auto& sidecar : status->sidecars()) {
            if (!sidecar.running() || sidecar.acked_version() < status->map_version()) {
              return false;
            }
          }
          return true;
        },
        absl::Seconds(60));
    ASSERT_TRUE(done) << leashd_->Log();
  }

  uint32_t ProxyPid() {
    auto status = leashd_->Status();
    if (!status.ok()) return 0;
    for (const auto& sidecar : status->sidecars()) {
      if (sidecar.name() == "leash-proxy" && sidecar.running()) return sidecar.pid();
    }
    return 0;
  }

  // Starts the squatter loop over the whole range; returns its log path once it runs.
  std::string StartLoop() {
    const std::string log = files_->Join(absl::StrCat("loop-", loops_.size()));
    absl::StatusOr<Background> loop = Background::Start(
        ns_->Exec(squatter_->AsUser({RunfilePath("test/leashd/port_squatter"), "loop", "18000",
                                     "18999"})),
        log);
    EXPECT_TRUE(loop.ok()) << loop.status();
    if (!loop.ok()) return log;
    loops_.push_back(*std::move(loop));
    EXPECT_TRUE(WaitFor([&] { return absl::StartsWith(ReadAll(log), "started\n"); },
                        absl::Seconds(10)))
        << ReadAll(log);
    return log;
  }

  // `port_squatter hold 127.0.0.1 <port>` as the squatter account, once it listens; its log
  // path in `log`.
  void HoldPort(uint16_t port, std::string* log) {
    *log = files_->Join(absl::StrCat("hold-", port));
    absl::StatusOr<Background> hold = Background::Start(
        ns_->Exec(squatter_->AsUser({RunfilePath("test/leashd/port_squatter"), "hold",
                                     "127.0.0.1", absl::StrCat(port)})),
        *log);
    ASSERT_TRUE(hold.ok()) << hold.status();
    loops_.push_back(*std::move(hold));
    ASSERT_TRUE(WaitFor([&] { return ReadAll(*log) == "listening\n"; }, absl::Seconds(10)))
        << ReadAll(*log);
  }

  LoopResult StopLoop(const std::string& log) {
    Background& loop = loops_.back();
    loop.Signal(SIGTERM);
    EXPECT_TRUE(loop.Wait(absl::Seconds(10)).ok());
    LoopResult result = ParseLoop(ReadAll(log));
    EXPECT_TRUE(result.finished) << ReadAll(log);
    return result;
  }

  // `port_squatter connect` as `account` in the namespace.
  std::string ConnectAs(const TestAccount& account, const std::string& address, uint16_t port) {
    auto run = ns_->Run(account.AsUser(
        {RunfilePath("test/leashd/port_squatter"), "connect", address, absl::StrCat(port)}));
    if (!run.ok()) return run.status().ToString();
    return std::string(absl::StripAsciiWhitespace(run->out));
  }

  // Each agent's TCP, over IPv4 and IPv6, is taken by its listener and judged (the floor
  // blocks blocked.example; the decision is logged under the agent's uid).
  void ExpectEveryAgentJudged() {
    for (const auto& [suffix, agent] : agents_) {
      EXPECT_EQ(ConnectAs(*agent, "192.0.2.11", 80), "judged") << agent->name();
      EXPECT_EQ(ConnectAs(*agent, "2001:db8::11", 80), "judged") << agent->name();
      const std::string uid = absl::StrCat("\"uid\":", agent->uid());
      EXPECT_TRUE(WaitFor(
          [&] {
            int blocked = 0;
            const std::string decisions = ReadAll(files_->Join("decisions.jsonl"));
            for (absl::string_view line : absl::StrSplit(decisions, '\n')) {
              if (absl::StrContains(line, uid) && absl::StrContains(line, "blocked.example") &&
                  !absl::StrContains(line, "not fully in force")) {
                ++blocked;
              }
            }
            return blocked >= 2;
          },
          absl::Seconds(10)))
          << agent->name() << "\n" << ReadAll(files_->Join("decisions.jsonl"));
    }
  }

  // `port_squatter <mode> <args>` as the squatter account in the namespace, in the background,
  // once its log starts with `ready`; the log's path.
  std::string StartSquatter(const std::vector<std::string>& args, const std::string& ready) {
    const std::string log = files_->Join(absl::StrCat("squatter-", loops_.size()));
    std::vector<std::string> argv = {RunfilePath("test/leashd/port_squatter")};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<Background> started = Background::Start(ns_->Exec(squatter_->AsUser(argv)), log);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return log;
    loops_.push_back(*std::move(started));
    EXPECT_TRUE(WaitFor([&] { return absl::StartsWith(ReadAll(log), ready); }, absl::Seconds(30)))
        << ReadAll(log);
    return log;
  }

  // Ends the background squatter process `index` and returns what it printed.
  std::string StopSquatter(size_t index, const std::string& log) {
    loops_[index].Signal(SIGTERM);
    EXPECT_TRUE(loops_[index].Wait(absl::Seconds(10)).ok());
    return ReadAll(log);
  }

  // `port_squatter udpsend` as `account`.
  std::string UdpSendAs(const TestAccount& account, const std::string& address, uint16_t port) {
    auto run = ns_->Run(account.AsUser(
        {RunfilePath("test/leashd/port_squatter"), "udpsend", address, absl::StrCat(port)}));
    if (!run.ok()) return run.status().ToString();
    return std::string(absl::StripAsciiWhitespace(run->out));
  }

  std::string tag_;
  const TestAccount* user_ = nullptr;
  const TestAccount* squatter_ = nullptr;
  std::map<std::string, const TestAccount*> agents_;
  std::unique_ptr<LeashdInstance> leashd_;
  std::vector<Background> loops_;
};

TEST_F(ProxyPortsTest, ASquatterLoopingThroughAProxyKillAndRespawnNeverGetsAPort) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("a"));
  ASSERT_NO_FATAL_FAILURE(AddAgent("b"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  EXPECT_THAT(leashd_->Log(), HasSubstr("holding 4000 of 4000 proxy port sockets"));
  EXPECT_THAT(leashd_->Log(), HasSubstr("2000 of 2000 wildcards"));
  const std::string log = StartLoop();
  const uint32_t old_proxy = ProxyPid();
  ASSERT_GT(old_proxy, 0u);
  ASSERT_EQ(kill(static_cast<pid_t>(old_proxy), SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return ProxyPid() != 0 && ProxyPid() != old_proxy; },
                      absl::Seconds(30)))
      << leashd_->Log();
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  const LoopResult loop = StopLoop(log);
  EXPECT_GT(loop.rounds, 0u);
  EXPECT_TRUE(loop.won_lines.empty()) << "the squatter bound " << loop.won_lines.size()
                                      << " port(s), first: " << loop.won_lines.front();
  ExpectEveryAgentJudged();
}

TEST_F(ProxyPortsTest, ASubjectOnboardedWhileASquatterLoopsGetsItsPort) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("a"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  const std::string log = StartLoop();
  ASSERT_NO_FATAL_FAILURE(AddAgent("b"));
  ASSERT_TRUE(leashd_->Sighup().ok());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  const LoopResult loop = StopLoop(log);
  EXPECT_GT(loop.rounds, 0u);
  EXPECT_TRUE(loop.won_lines.empty()) << "the squatter bound " << loop.won_lines.size()
                                      << " port(s), first: " << loop.won_lines.front();
  ExpectEveryAgentJudged();
}

// The window a leashd restart leaves (its sockets close with it), measured: every port the
// squatter won was won between the old leashd's SIGTERM and the new one answering, and every
// subject works afterwards.
TEST_F(ProxyPortsTest, ARestartIsTheOnlyWindowAndEverySubjectWorksAfterIt) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("a"));
  ASSERT_NO_FATAL_FAILURE(AddAgent("b"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  const std::string log = StartLoop();
  absl::SleepFor(absl::Milliseconds(300));  // a few rounds against the running leashd
  const int64_t stop_sent = MonotonicNs();
  ASSERT_TRUE(leashd_->Stop().ok());
  const int64_t old_gone = MonotonicNs();
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  const int64_t new_up = MonotonicNs();
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  absl::SleepFor(absl::Milliseconds(300));  // and a few against the new one
  const LoopResult loop = StopLoop(log);
  EXPECT_GT(loop.rounds, 0u);
  for (size_t i = 0; i < loop.wins.size(); ++i) {
    EXPECT_GE(loop.wins[i], stop_sent) << loop.won_lines[i];
    EXPECT_LE(loop.wins[i], new_up) << loop.won_lines[i];
  }
  const auto ms = [](int64_t ns) { return absl::StrCat(ns / 100000 / 10.0); };
  std::cout << "restart window: SIGTERM to old leashd gone " << ms(old_gone - stop_sent)
            << " ms, to new leashd answering " << ms(new_up - stop_sent) << " ms; squatter won "
            << loop.wins.size() << " binds";
  if (!loop.wins.empty()) {
    std::cout << " from " << ms(loop.wins.front() - stop_sent) << " to "
              << ms(loop.wins.back() - stop_sent) << " ms after SIGTERM (an open window of "
              << ms(loop.wins.back() - loop.wins.front()) << " ms)";
  }
  std::cout << "; " << loop.attempts << " attempts in " << loop.rounds << " rounds\n";
  EXPECT_THAT(leashd_->Log(), HasSubstr("holding 4000 of 4000 proxy port sockets"));
  ExpectEveryAgentJudged();
}

// A squatter that won an agent's port while leashd was down and keeps it: found at start and
// said loudly; the agent moves to a fresh port and keeps working (never redirected to the
// squatter), other agents are untouched, and a new account is never given a squatted port.
TEST_F(ProxyPortsTest, AnAgentWhosePortWasWonDuringARestartMovesToAFreshOne) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("a"));
  ASSERT_NO_FATAL_FAILURE(AddAgent("b"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  std::map<std::string, leash::v1::SubjectStatus> subjects = Subjects();
  const uint16_t port_a = static_cast<uint16_t>(subjects[agents_["a"]->name()].port());
  const uint16_t port_b = static_cast<uint16_t>(subjects[agents_["b"]->name()].port());
  uint16_t highest = 0;
  for (const auto& [name, s] : subjects) highest = std::max<uint16_t>(highest, s.port());
  const uint16_t next_free =
      static_cast<uint16_t>(highest + 1 == 18443 ? highest + 2 : highest + 1);
  ASSERT_TRUE(leashd_->Stop().ok());

  std::vector<std::string> hold_logs(2);
  ASSERT_NO_FATAL_FAILURE(HoldPort(port_a, &hold_logs[0]));
  ASSERT_NO_FATAL_FAILURE(HoldPort(next_free, &hold_logs[1]));
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), HasSubstr("holding 3998 of 4000 proxy port sockets"));
  EXPECT_THAT(leashd_->Log(), HasSubstr("CRITICAL: 2 proxy port socket(s) are held by another "
                                        "process"));
  // The squatter's 127.0.0.1 also keeps the dual-stack wildcard of those ports from leashd.
  EXPECT_THAT(leashd_->Log(), HasSubstr("1998 of 2000 wildcards"));
  EXPECT_THAT(leashd_->Log(),
              HasSubstr(absl::StrCat("127.0.0.1:", port_a, " (Address already in use)")));
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  subjects = Subjects();
  const uint16_t moved_a = static_cast<uint16_t>(subjects[agents_["a"]->name()].port());
  EXPECT_NE(moved_a, port_a);
  EXPECT_NE(moved_a, next_free);
  EXPECT_EQ(subjects[agents_["b"]->name()].port(), port_b);
  EXPECT_THAT(leashd_->Log(), HasSubstr(absl::StrCat(agents_["a"]->name(),
                                                     " moved from proxy port ", port_a, " to ",
                                                     moved_a)));
  // A new account skips the squatted port.
  ASSERT_NO_FATAL_FAILURE(AddAgent("c"));
  ASSERT_TRUE(leashd_->Sighup().ok());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  EXPECT_NE(Subjects()[agents_["c"]->name()].port(), next_free);
  // Every agent, a included, is judged; an agent aiming at the squatted port lands on its own
  // listener.
  ExpectEveryAgentJudged();
  EXPECT_NE(ConnectAs(*agents_["b"], "127.0.0.1", port_a), "squatter");

  for (Background& hold : loops_) hold.Signal(SIGTERM);
  for (Background& hold : loops_) EXPECT_TRUE(hold.Wait(absl::Seconds(10)).ok());
  loops_.clear();
  for (const std::string& hold_log : hold_logs) {
    EXPECT_THAT(ReadAll(hold_log), HasSubstr("served=0")) << "a subject reached the squatter";
  }
}

// The single-subject port cannot move: a squatter on 127.0.0.1:18443 across a restart leaves
// that subject denied, its chain resetting its TCP, never redirected to the squatter. (The
// single-subject path needs no leash-* account: this test shows its leashd none, whatever
// other runs have on the host.)
TEST_F(ProxyPortsTest, TheSingleSubjectPortWonDuringARestartFailsClosed) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  ASSERT_TRUE(WaitFor([&] { return Subjects()[user_->name()].port() == 18443; },
                      absl::Seconds(30)))
      << leashd_->Log();
  ASSERT_TRUE(leashd_->Stop().ok());
  std::string hold_log;
  ASSERT_NO_FATAL_FAILURE(HoldPort(18443, &hold_log));
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  const std::string log = leashd_->Log();
  ASSERT_TRUE(absl::StrContains(log.substr(log.rfind("leashd: user ")), "single-subject host"))
      << "leashd did not take the single-subject path\n" << log;
  EXPECT_THAT(leashd_->Log(), HasSubstr("127.0.0.1:18443 (Address already in use)"));
  EXPECT_TRUE(WaitFor(
      [&] {
        const auto now = Subjects();
        auto it = now.find(user_->name());
        return it != now.end() && it->second.state() != "enforced" &&
               ConnectAs(*user_, "192.0.2.11", 80) == "refused";
      },
      absl::Seconds(60)))
      << leashd_->Log();
  EXPECT_THAT(Subjects()[user_->name()].detail(),
              HasSubstr("its proxy listener would not bind (port 18443"));
  EXPECT_THAT(leashd_->Log(), HasSubstr("leashd holds no TCP socket for 127.0.0.1:18443"));
  EXPECT_EQ(ConnectAs(*user_, "2001:db8::11", 80), "refused");
  loops_.back().Signal(SIGTERM);
  EXPECT_TRUE(loops_.back().Wait(absl::Seconds(10)).ok());
  loops_.clear();
  EXPECT_THAT(ReadAll(hold_log), HasSubstr("served=0")) << "the subject reached the squatter";
}

// A subject that cannot get a proxy port (another account held every port of the range,
// TCP and UDP, while leashd was stopped) still gets a chain: the refuse-all one. Its TCP and its
// UDP (DNS among it) to a server in the namespace never get there; `leash status` says it is
// refused and names who holds the ports (UID and PID) and leashd's log says so too; and once the holder lets go, the next
// reconcile gives it a port and its policy, with no restart (leashd takes the freed ports back
// before that pass). The agent that had a port before
// the squat (its listener now cannot bind) comes back the same way.
TEST_F(ProxyPortsTest, APortlessSubjectIsRefusedAndRecoversOnTheNextReconcile) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("a"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  ASSERT_TRUE(leashd_->Stop().ok());
  // While leashd is stopped: the squatter takes every port, and a new agent appears.
  const std::string hold_log = StartSquatter({"holdall", "18000", "18999"}, "holding ");
  ASSERT_THAT(ReadAll(hold_log), HasSubstr("holding tcp=1000 udp=1000"));
  const pid_t holder = loops_.back().pid();
  const size_t hold_index = loops_.size() - 1;
  ASSERT_NO_FATAL_FAILURE(AddAgent("b"));
  // Servers the agents aim at, off loopback: TCP 8080 and UDP 5353.
  const std::string tcp_log = StartSquatter({"hold", "192.0.2.11", "8080"}, "listening");
  const size_t tcp_index = loops_.size() - 1;
  const std::string udp_log = StartSquatter({"udpecho", "192.0.2.11", "5353"}, "listening");
  const size_t udp_index = loops_.size() - 1;
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();

  const TestAccount& b = *agents_["b"];
  leash::v1::SubjectStatus status = Subjects()[b.name()];
  EXPECT_NE(status.state(), "enforced");
  EXPECT_THAT(status.detail(), HasSubstr("refused: no proxy port for it"));
  EXPECT_THAT(status.detail(), HasSubstr(absl::StrCat("uid ", squatter_->uid())));
  EXPECT_THAT(status.detail(), HasSubstr(absl::StrCat("pid ", holder)));
  EXPECT_THAT(status.detail(), HasSubstr("tcp 18000-18999"));
  EXPECT_THAT(leashd_->Log(), HasSubstr(absl::StrCat("uid ", squatter_->uid())));
  // The decision log says it too: a critical network block under b's UID naming the holder.
  EXPECT_TRUE(WaitFor(
      [&] {
        for (absl::string_view line :
             absl::StrSplit(ReadAll(files_->Join("decisions.jsonl")), '\n')) {
          if (absl::StrContains(line, absl::StrCat("\"uid\":", b.uid())) &&
              absl::StrContains(line, "refused: no proxy port") &&
              absl::StrContains(line, absl::StrCat("pid ", holder)) &&
              absl::StrContains(line, "critical")) {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(10)))
      << ReadAll(files_->Join("decisions.jsonl"));
  for (const auto& [suffix, agent] : agents_) {
    EXPECT_EQ(ConnectAs(*agent, "192.0.2.11", 8080), "refused") << agent->name();
    // Dropped at its chain: sendto fails (EPERM) or nothing comes back.
    EXPECT_NE(UdpSendAs(*agent, "192.0.2.11", 5353), "answered") << agent->name();
  }
  EXPECT_THAT(StopSquatter(tcp_index, tcp_log), HasSubstr("served=0"))
      << "a refused subject's TCP reached the server";
  EXPECT_THAT(StopSquatter(udp_index, udp_log), HasSubstr("served=0"))
      << "a refused subject's UDP reached the server";
  EXPECT_THAT(StopSquatter(hold_index, hold_log), HasSubstr("served=0"))
      << "a subject was redirected to the squatter";

  // The squatter has let go: the next reconcile brings every subject back, no restart.
  const uint64_t passes = leashd_->Status()->reconcile_passes();
  ASSERT_TRUE(leashd_->Sighup().ok());
  ASSERT_TRUE(leashd_->WaitForPasses(passes + 1, absl::Seconds(60)).ok());
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  EXPECT_NE(Subjects()[b.name()].port(), 0u);
  ExpectEveryAgentJudged();
}

// Under systemd the proxy's ports never leave Leash's hands across a restart: leashd puts every
// port socket in the service's file-descriptor store, systemd (here, the test) keeps them while
// leashd is down and passes them to the next leashd (LISTEN_FDS), which takes them back. A
// squatter binding every port in a loop through the whole restart wins none.
TEST_F(ProxyPortsTest, UnderSystemdTheFdStoreKeepsEveryPortAcrossARestart) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("a"));
  ASSERT_NO_FATAL_FAILURE(AddAgent("b"));
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  const std::string path = absl::StrCat("/tmp/lnfy-", tag_);
  FakeNotifySocket store(path);
  ASSERT_TRUE(store.bound()) << path;
  // leashd inherits the test's environment, as a service gets NOTIFY_SOCKET from systemd.
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  unsetenv("NOTIFY_SOCKET");
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  // Every socket leashd holds: TCP and UDP on 127.0.0.1, ::1 and the wildcard.
  EXPECT_TRUE(WaitFor([&] { return store.size() >= 6000; }, absl::Seconds(30)))
      << "the store holds " << store.size() << " descriptors\n" << leashd_->Log();
  ASSERT_EQ(store.size(), 6000u);
  const std::string log = StartLoop();
  const int64_t stop_sent = MonotonicNs();
  ASSERT_TRUE(leashd_->Stop().ok());
  // The window a restart without the store leaves open: the squatter binds every port of the
  // range at least once while no leashd runs (a whole round begun after the stop).
  loops_.back().Signal(SIGUSR1);
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(ReadAll(log), "round done\n"); },
                      absl::Seconds(30)))
      << ReadAll(log);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  const absl::Status relaunched = leashd_->Relaunch(store.fds(), store.names());
  unsetenv("NOTIFY_SOCKET");
  ASSERT_TRUE(relaunched.ok()) << relaunched;
  const int64_t new_up = MonotonicNs();
  ASSERT_NO_FATAL_FAILURE(WaitForAgentsEnforced());
  const LoopResult loop = StopLoop(log);
  std::cout << "restart with the fd store: SIGTERM to new leashd answering "
            << (new_up - stop_sent) / 1000000 << " ms; squatter won " << loop.wins.size()
            << " binds in " << loop.attempts << " attempts over " << loop.rounds << " rounds\n";
  EXPECT_GT(loop.rounds, 0u);
  EXPECT_TRUE(loop.won_lines.empty()) << "the squatter bound " << loop.won_lines.size()
                                      << " port(s), first: " << loop.won_lines.front();
  EXPECT_THAT(leashd_->Log(), HasSubstr("took back 6000 proxy port socket(s) from systemd's "
                                        "file-descriptor store"));
  EXPECT_THAT(leashd_->Log(), HasSubstr("holding 4000 of 4000 proxy port sockets"));
  ExpectEveryAgentJudged();
}

}  // namespace
}  // namespace leash::testing
