// A failure never un-confines, for real: leashd with its real sidecars in a network namespace
// whose veth peer namespace stands in for a host off this one, real leash-* accounts named
// uniquely per run, the watcher confined to a test tmpfs. An exit for failure (the watcher's
// fourth death in ten minutes, a crash) leaves every chain in place, so the agent's network
// stays closed (refused); only a deliberate stop releases; ExecStopPost's
// `leash teardown --unless-failed` tells the two apart; a leashd that starts over the chains it
// finds takes them over with no moment in which the agent gets out. And rule N13 of
// docs/ARCHITECTURE.md: enforcing several UIDs refuses to run without nft.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
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
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPeer[] = "192.0.2.11";
constexpr int kPeerPort = 8080;

// The agent's side: connects to the peer, sends a request naming a host no policy allows, and
// reads to the end. One outcome per attempt, counted, printed once the stop file exists (or
// after one attempt without a stop file): REFUSED (nothing listens where the chain sends it),
// CLOSED (the proxy reset or closed it), ESCAPED (the peer's own answer: the agent got out),
// OTHER (a time-out or another error).
constexpr char kClient[] = R"(import os, socket, sys
stop = sys.argv[1] if len(sys.argv) > 1 else ""
counts = {"REFUSED": 0, "CLOSED": 0, "ESCAPED": 0, "OTHER": 0}
while True:
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("192.0.2.11", 8080))
        s.sendall(b"GET / HTTP/1.0\r\nHost: blocked-failsafe.example\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        counts["ESCAPED" if b"ESCAPED" in data else "CLOSED"] += 1
    except ConnectionRefusedError:
        counts["REFUSED"] += 1
    except (ConnectionResetError, BrokenPipeError):
        counts["CLOSED"] += 1
    except Exception:
        counts["OTHER"] += 1
        if not stop:
            sys.stderr.write(repr(sys.exc_info()[1]) + "\n")
    finally:
        s.close()
    if not stop or os.path.exists(stop):
        break
print(" ".join("%s=%d" % kv for kv in counts.items()), flush=True)
)";

// The peer: answers every connection with ESCAPED once it has read the request, and lets the
// client close first (a close with the request unread would reset the answer away).
constexpr char kServer[] = R"(import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.11", 8080))
s.listen(512)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = c.recv(4096)
            if not chunk:
                break
            request += chunk
        c.sendall(b"HTTP/1.0 200 OK\r\n\r\nESCAPED\n")
        c.shutdown(socket.SHUT_WR)
        while c.recv(4096):
            pass
    except OSError:
        pass
    c.close()
)";

// The client's counts, from the last line of its output (an error it saw comes before).
std::map<std::string, int> Counts(const std::string& out) {
  std::map<std::string, int> counts;
  absl::string_view last = absl::StripAsciiWhitespace(out);
  if (const size_t nl = last.rfind('\n'); nl != absl::string_view::npos) {
    last = last.substr(nl + 1);
  }
  for (absl::string_view word : absl::StrSplit(last, ' ')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(word, absl::MaxSplits('=', 1));
    int n = 0;
    if (absl::SimpleAtoi(kv.second, &n)) counts[kv.first] = n;
  }
  return counts;
}

class FailsafeTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    auto peer = NetNamespace::Create();
    ASSERT_TRUE(peer.ok()) << peer.status();
    peer_ = *std::move(peer);
    ASSERT_TRUE(ns_->AddVethTo(*peer_, "lfs0", {"192.0.2.10/24"}, "lfs1", {"192.0.2.11/24"}).ok());
    ASSERT_NE(MountTmpfs(), nullptr);
    ASSERT_NE(MakeFiles("lfs"), nullptr);
    std::ofstream(files_->Join("client.py")) << kClient;
    std::ofstream(files_->Join("server.py")) << kServer;
    chmod(files_->Join("client.py").c_str(), 0644);
    auto server = Background::Start(
        peer_->Exec({"/usr/bin/python3", files_->Join("server.py")}), files_->Join("server.out"));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::make_unique<Background>(*std::move(server));
    ASSERT_TRUE(WaitFor([&] { return absl::StrContains(ReadAll(files_->Join("server.out")),
                                                       "listening"); },
                        absl::Seconds(20)))
        << ReadAll(files_->Join("server.out"));
    // leashd sees this test's accounts only: other runs on this host make leash-* accounts of
    // their own, which would otherwise be its agents too (and make the fallback refuse).
    ASSERT_NE(MakeAccountView(), nullptr);
    user_ = AddAccount(UniqueAccountName("lfs-user"));
    ASSERT_NE(user_, nullptr);
  }

  void TearDown() override {
    leashd_.reset();
    if (server_) {
      server_->Signal(SIGKILL);
      server_->Wait(absl::Seconds(5)).IgnoreError();
    }
  }

  // An agent account with a host name unique to this run, shown to leashd as `name`; to a
  // running leashd at once, as useradd on the host would be.
  void AddAgent(const std::string& name) {
    const TestAccount* agent = AddAccount(UniqueAccountName(name), name);
    ASSERT_NE(agent, nullptr);
    agents_.push_back(agent);
    agent_names_.push_back(name);
    if (leashd_ != nullptr) {
      ASSERT_TRUE(leashd_->PublishAccounts().ok());
    }
  }
  const TestAccount& agent() const { return *agents_.front(); }
  // The name leashd knows the first agent by.
  const std::string& agent_name() const { return agent_names_.front(); }

  absl::StatusOr<std::unique_ptr<LeashdInstance>> Leashd(
      const std::vector<std::string>& flags = {}) {
    return LeashdInstance::Start(FloorYaml(), *ns_, fs_->path(), flags, view_.get());
  }

  std::string FloorYaml() const {
    return absl::StrCat(
        "user: ", user_->name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", fs_->path(), "/secret\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
        "logging: { level: info, decisions: ", files_->Join("decisions.jsonl"), " }\n");
  }

  void StartLeashd() {
    auto leashd = Leashd();
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
    // Enforced: the chain in, the proxy listening with the map acked.
    ASSERT_TRUE(WaitFor([&] { return InForce(agent_name()); }, absl::Seconds(60)))
        << leashd_->Log();
  }

  // Whether both sidecars run with the current map acked (and `account`, unless empty, is
  // enforced).
  bool InForce(const std::string& account = "") {
    auto status = leashd_->Status();
    if (!status.ok()) return false;
    bool enforced = account.empty();
    for (const auto& s : status->subjects()) {
      enforced = enforced || (s.account() == account && s.state() == "enforced");
    }
    int acked = 0;
    for (const auto& sidecar : status->sidecars()) {
      acked += sidecar.running() && sidecar.acked_version() >= status->map_version();
    }
    return enforced && acked == 2;
  }

  // One attempt of the agent to reach the peer: its outcome (REFUSED, CLOSED, ESCAPED), or
  // OTHER with the error the client saw.
  std::string AgentConnectsOnce() {
    auto run = leash::testing::Run(
        ns_->Exec(agent().AsUser({"/usr/bin/python3", files_->Join("client.py")})),
        absl::Seconds(30));
    if (!run.ok()) return run.status().ToString();
    for (const auto& [outcome, n] : Counts(run->out)) {
      if (n == 1 && outcome != "OTHER") return outcome;
    }
    return "OTHER: " + run->out;
  }

  // What `nft list tables` shows in leashd's namespace.
  std::string Tables() {
    auto listed = ns_->Run({"nft", "list", "tables"});
    return listed.ok() ? listed->out : "";
  }
  bool AgentHasChain(uint32_t uid) {
    auto listed = ns_->Run({"nft", "list", "chain", "ip", "leash", absl::StrCat("agent_", uid)});
    return listed.ok() && listed->exit_code == 0;
  }

  // `leash teardown --unless-failed` as ExecStopPost runs it, with what systemd would pass.
  absl::StatusOr<RunResult> StopPost(const std::string& service_result,
                                     const std::string& exit_code, const std::string& exit_status) {
    return leash::testing::Run(ns_->ExecSharingMounts(
        {"env", "SERVICE_RESULT=" + service_result, "EXIT_CODE=" + exit_code,
         "EXIT_STATUS=" + exit_status, RunfilePath("cli/leash"),
         "--config=" + leashd_->config_path(), "--state-dir=" + leashd_->state_dir(),
         "--run-dir=" + leashd_->run_dir(), "teardown", "--unless-failed"}));
  }

  // The watcher's pid with the current map acked, once it differs from `old` (0 if not in 30 s).
  uint32_t WaitForWatcherOtherThan(uint32_t old) {
    uint32_t now = 0;
    WaitFor(
        [&] {
          auto status = leashd_->Status();
          if (!status.ok()) return false;
          for (const auto& sidecar : status->sidecars()) {
            if (sidecar.name() == "leash-fswatch" && sidecar.running() && sidecar.pid() != old &&
                sidecar.acked_version() >= status->map_version()) {
              now = sidecar.pid();
              return true;
            }
          }
          return false;
        },
        absl::Seconds(30));
    return now;
  }

  // SIGKILLs both sidecars and leashd: a crash that takes the sidecars too (the kernel's OOM
  // killer, a supervisor that kills the whole group); no stop path runs.
  void Crash() {
    auto status = leashd_->Status();
    ASSERT_TRUE(status.ok()) << status.status();
    for (const auto& sidecar : status->sidecars()) {
      if (sidecar.running() && sidecar.pid() > 0) kill(static_cast<pid_t>(sidecar.pid()), SIGKILL);
    }
    kill(leashd_->pid(), SIGKILL);
    ASSERT_TRUE(leashd_->WaitForExit(absl::Seconds(20)).ok());
  }

  std::unique_ptr<NetNamespace> peer_;
  std::unique_ptr<Background> server_;
  const TestAccount* user_ = nullptr;
  std::vector<const TestAccount*> agents_;
  std::vector<std::string> agent_names_;
  std::unique_ptr<LeashdInstance> leashd_;
};

// The watcher's fourth death in ten minutes: leashd gives up, stops its sidecars and stays
// running (holding the fanotify group); every chain stays, so the agent's connection out is
// refused (its redirect target, the proxy, is gone) rather than let through. Stopped then, it
// exits 1, for failure, and still leaves every chain.
TEST_F(FailsafeTest, AnExitForFailureLeavesEveryChainInPlaceSoTheNetworkStaysClosed) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsa"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t uid = agent().uid();
  // Enforced: the proxy refuses the name.
  EXPECT_EQ(AgentConnectsOnce(), "CLOSED") << leashd_->Log();

  uint32_t watcher = WaitForWatcherOtherThan(0);
  ASSERT_NE(watcher, 0u) << leashd_->Log();
  for (int death = 1; death <= 4; ++death) {
    // Each kill lands on a reader with a standby ready, so each is one takeover and one death.
    ASSERT_TRUE(WaitFor([&] { return leashd_->StandbysReady() >= death; }, absl::Seconds(60)))
        << "death " << death << "\n" << leashd_->Log();
    ASSERT_EQ(kill(static_cast<pid_t>(watcher), SIGKILL), 0);
    if (death == 4) break;
    const uint32_t next = WaitForWatcherOtherThan(watcher);
    ASSERT_NE(next, 0u) << "death " << death << "\n" << leashd_->Log();
    watcher = next;
  }
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(leashd_->Log(), "gave up: the sidecars are "
                                                                    "stopped"); },
                      absl::Seconds(60)))
      << "leashd did not give up:\n" << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), HasSubstr("leash-fswatch died 4 times in 10m"));
  // While leashd holds on, it still holds the proxy ports (nothing else can bind them) and
  // accepts on none: the agent's connection is never answered, and never let out.
  const std::string held = AgentConnectsOnce();
  EXPECT_THAT(held, ::testing::AnyOf(::testing::Eq("REFUSED"), HasSubstr("TimeoutError"))) << held;
  absl::StatusOr<int> ended = leashd_->Stop();
  ASSERT_TRUE(ended.ok()) << leashd_->Log();
  EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 1) << *ended << "\n" << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), HasSubstr("exiting for failure: every chain is left in place"));
  EXPECT_THAT(leashd_->Log(), Not(HasSubstr("released ")));

  // The tables and the agent's chain are all still there, and its connection is refused.
  const std::string tables = Tables();
  EXPECT_THAT(tables, HasSubstr("table ip leash"));
  EXPECT_THAT(tables, HasSubstr("table ip6 leash"));
  EXPECT_THAT(tables, HasSubstr("table inet leash_filter"));
  EXPECT_THAT(tables, HasSubstr("table inet leash_guard"));
  EXPECT_TRUE(AgentHasChain(uid));
  EXPECT_EQ(AgentConnectsOnce(), "REFUSED");

  // Until a new leashd is in force, which takes the chains over: judged by the proxy again.
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  ASSERT_TRUE(WaitFor([&] { return InForce(agent_name()); }, absl::Seconds(60)))
      << leashd_->Log();
  EXPECT_EQ(AgentConnectsOnce(), "CLOSED");
}

// ExecStopPost after a failure releases nothing; after a deliberate stop it releases, and the
// agent's network really opens (which is what a stop is for).
TEST_F(FailsafeTest, ExecStopPostReleasesTheChainsOnlyAfterADeliberateStop) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsa"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t uid = agent().uid();
  ASSERT_NO_FATAL_FAILURE(Crash());
  for (const auto& [result, code, status] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"exit-code", "exited", "1"}, {"signal", "killed", "KILL"},
           {"core-dump", "dumped", "SEGV"}}) {
    auto kept = StopPost(result, code, status);
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->exit_code, 0) << kept->out;
    EXPECT_THAT(kept->out, HasSubstr("leash teardown: nothing released: leashd ended for failure"));
    EXPECT_THAT(kept->out, HasSubstr("every chain is left in place"));
    EXPECT_TRUE(AgentHasChain(uid)) << result;
  }
  EXPECT_EQ(AgentConnectsOnce(), "REFUSED");

  auto released = StopPost("success", "exited", "0");
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->exit_code, 0) << released->out;
  EXPECT_THAT(released->out, HasSubstr("leash.service was stopped"));
  EXPECT_THAT(released->out, HasSubstr("released "));
  EXPECT_FALSE(AgentHasChain(uid));
  EXPECT_EQ(AgentConnectsOnce(), "ESCAPED");
}

// SIGTERM is a deliberate stop: leashd's own stop path releases every chain and exits 0.
TEST_F(FailsafeTest, ADeliberateStopReleasesEveryChain) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsa"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t uid = agent().uid();
  auto stopped = leashd_->Stop();
  ASSERT_TRUE(stopped.ok());
  EXPECT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), HasSubstr(" subject chain(s)"));
  EXPECT_FALSE(AgentHasChain(uid));
  EXPECT_EQ(AgentConnectsOnce(), "ESCAPED");
}

// A leashd that starts over the chains a failed one left takes them over in place: the agent
// connects in a tight loop from before the crash until the new leashd enforces, and not one
// attempt reaches the peer. The loop saw both sides of the restart (refused while no proxy
// ran, closed by the new proxy after), so it spanned the takeover.
TEST_F(FailsafeTest, ALeashdStartingOverLeftoverChainsTakesThemOverWithoutAWindow) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsa"));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const std::string stop = files_->Join("stop-loop");
  auto loop = Background::Start(
      ns_->Exec(agent().AsUser({"/usr/bin/python3", files_->Join("client.py"), stop})),
      files_->Join("loop.out"));
  ASSERT_TRUE(loop.ok());
  absl::SleepFor(absl::Seconds(1));
  ASSERT_NO_FATAL_FAILURE(Crash());
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  ASSERT_TRUE(WaitFor([&] { return InForce(agent_name()); }, absl::Seconds(60)))
      << leashd_->Log();
  absl::SleepFor(absl::Seconds(1));
  std::ofstream(stop) << "stop";
  ASSERT_TRUE(loop->Wait(absl::Seconds(60)).ok());
  const std::string out = ReadAll(files_->Join("loop.out"));
  const std::map<std::string, int> counts = Counts(out);
  ASSERT_EQ(counts.size(), 4u) << out;
  RecordProperty("agent_attempts_across_the_restart", out);
  EXPECT_EQ(counts.at("ESCAPED"), 0) << out;
  EXPECT_GT(counts.at("REFUSED"), 0) << out;
  EXPECT_GT(counts.at("CLOSED"), 0) << out;
  EXPECT_THAT(leashd_->Log(), Not(HasSubstr(" subject chain(s)")));
}

// The fallback enforces one UID, so enforcing several refuses to run without nftables rather
// than quietly apply one user's policy to all of them (docs/ARCHITECTURE.md, rule N13). With
// the iptables fallback and two agent accounts leashd does not start, says why, and adds no rule.
TEST_F(FailsafeTest, EnforcingSeveralUidsRefusesToRunWithoutNft) {
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsa"));
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsb"));
  auto leashd = Leashd({"--netfilter=iptables"});
  ASSERT_FALSE(leashd.ok()) << "leashd started on the iptables fallback with two agents";
  const std::string log(leashd.status().message());
  EXPECT_THAT(log, HasSubstr("not starting: enforcing several UIDs needs nftables"));
  EXPECT_THAT(log, HasSubstr("the iptables fallback is configured (--netfilter=iptables)"));
  EXPECT_THAT(log, HasSubstr(agent_names_[0]));
  EXPECT_THAT(log, HasSubstr(agent_names_[1]));
  EXPECT_THAT(log, HasSubstr("besides the configured user " + user_->name()));
  EXPECT_THAT(log, HasSubstr("is closed (every connection refused) rather than left unconfined"));
  auto nat = ns_->Run({"iptables-legacy-save", "-t", "nat"});
  ASSERT_TRUE(nat.ok());
  EXPECT_THAT(nat->out, Not(HasSubstr("leash-agent-")));
  // A refusal is a failure, and leaves neither agent unconfined.
  EXPECT_EQ(AgentConnectsOnce(), "REFUSED");
  auto second = leash::testing::Run(ns_->Exec(
      agents_[1]->AsUser({"/usr/bin/python3", files_->Join("client.py")})));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Counts(second->out)["REFUSED"], 1) << second->out;

  // Once nftables can be used, a leashd on it enforces the agents and lifts the closures: the
  // agent is judged by its proxy again rather than refused outright.
  auto on_nft = Leashd();
  ASSERT_TRUE(on_nft.ok()) << on_nft.status();
  leashd_ = *std::move(on_nft);
  ASSERT_TRUE(WaitFor([&] { return InForce(agent_name()); }, absl::Seconds(60)))
      << leashd_->Log();
  // Lifted right after the first reconcile returns (the status may say in force just before).
  const std::string lifted =
      absl::StrCat("lifted the iptables fallback's closure of uid ", agent().uid());
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(leashd_->Log(), lifted); },
                      absl::Seconds(30)))
      << leashd_->Log();
  EXPECT_EQ(AgentConnectsOnce(), "CLOSED");
}

// The same rule while running: on a host the fallback enforces (no agent accounts, the
// configured user alone), an agent account that appears cannot be enforced, here or by a
// restart. Its network is closed, loudly, and the configured user stays enforced.
TEST_F(FailsafeTest, AnAgentAppearingOnTheIptablesFallbackIsClosedNotUnconfined) {
  // The account view shows leashd no agent yet, whatever other runs have made on this host.
  auto leashd = Leashd({"--netfilter=iptables"});
  ASSERT_TRUE(leashd.ok()) << leashd.status();
  leashd_ = *std::move(leashd);
  ASSERT_NO_FATAL_FAILURE(AddAgent("leash-fsa"));
  ASSERT_TRUE(WaitFor(
      [&] { return absl::StrContains(leashd_->Log(), "CRITICAL: agent account(s) appeared"); },
      absl::Seconds(30)))
      << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), HasSubstr("enforcing several UIDs needs nftables"));
  EXPECT_THAT(leashd_->Log(), HasSubstr(absl::StrCat("the network of ", agent_name(), " (uid ",
                                                     agent().uid(), ") is closed")));
  EXPECT_EQ(AgentConnectsOnce(), "REFUSED");
  auto nat = ns_->Run({"iptables-legacy-save", "-t", "nat"});
  ASSERT_TRUE(nat.ok());
  EXPECT_THAT(nat->out, HasSubstr(absl::StrCat("leash-agent-", user_->uid())));
}

}  // namespace
}  // namespace leash::testing
