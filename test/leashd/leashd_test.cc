// leashd end to end: the real daemon, its real sidecars and nft rules in a network
// namespace, real leash-* test accounts discovered from passwd, the watcher confined to a test
// tmpfs, driven through its Control RPCs and SIGHUP as an operator and Sentinel would.
#include <sys/un.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/grpc/reflection_client.h"
#include "test/leashd/fake_notify_socket.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// The floor every test starts from: network by name, the filesystem confined to the tmpfs.
std::string Floor(const std::string& user, const std::string& fs) {
  return absl::StrCat(
      "user: ", user, "\nfail_mode: closed\n",
      "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
      "filesystem: { mode: blacklist, allow: [], deny: [\"", fs, "/secret\"] }\n",
      "commands: { mode: blacklist, allow: [], deny: [\"", fs, "/bin/forbidden\"] }\n",
      "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
      "logging: { level: info, decisions: DECISIONS }\n");
}

class LeashdTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_NE(MountTmpfs(), nullptr);
    // leashd sees this test's accounts only: other runs' agents never reach its status.
    ASSERT_NE(MakeAccountView(), nullptr);
    user_ = AddAccount(UniqueAccountName("lctl-user"));
    ASSERT_NE(user_, nullptr);
  }

  // Agent accounts with host names unique to this run, shown to leashd as `names`; to a
  // running leashd at once, as useradd on the host would be.
  void AddAgents(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      const TestAccount* agent = AddAccount(UniqueAccountName(name), name);
      ASSERT_NE(agent, nullptr);
      agents_[name] = agent;
    }
    if (leashd_ != nullptr) {
      ASSERT_TRUE(leashd_->PublishAccounts().ok());
    }
  }

  void StartLeashd() {
    std::string floor = Floor(user_->name(), fs_->path());
    // The decision log goes in the instance's own folder; it is only known once started, so
    // the fixture's config is written with a placeholder the first start replaces.
    ASSERT_NE(MakeFiles("lid-log"), nullptr);
    floor.replace(floor.find("DECISIONS"), 9, files_->Join("decisions.jsonl"));
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path(), {}, view_.get());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  leash::v1::StatusResponse Status() {
    auto status = leashd_->Status();
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? *status : leash::v1::StatusResponse();
  }

  std::map<std::string, leash::v1::SubjectStatus> Subjects() {
    std::map<std::string, leash::v1::SubjectStatus> out;
    const leash::v1::StatusResponse status = Status();
    for (const auto& s : status.subjects()) out[s.account()] = s;
    return out;
  }

  // Writes a profile file and saves it through the CLI.
  RunResult SaveProfile(const std::string& name, const std::string& yaml,
                        std::vector<std::string> extra = {}) {
    const std::string path = files_->Join(name + ".yaml");
    std::ofstream(path) << yaml;
    std::vector<std::string> args = {"profile", "save", name, "--from", path};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = leashd_->Cli(args);
    EXPECT_TRUE(result.ok());
    return result.ok() ? *result : RunResult();
  }

  RunResult Cli(const std::vector<std::string>& args) {
    auto result = leashd_->Cli(args);
    EXPECT_TRUE(result.ok());
    return result.ok() ? *result : RunResult();
  }

  // The rule handles of one UID's redirect chain, as the kernel lists them: a re-applied chain
  // gets new handles, an untouched one keeps its own.
  std::string ChainHandles(uint32_t uid) {
    auto listed = ns_->Run({"nft", "-a", "list", "chain", "ip", "leash", absl::StrCat("agent_", uid)});
    if (!listed.ok() || listed->exit_code != 0) return "";
    std::string handles;
    for (absl::string_view line : absl::StrSplit(listed->out, '\n')) {
      const size_t at = line.find("# handle ");
      if (at != absl::string_view::npos) absl::StrAppend(&handles, line.substr(at + 9), ",");
    }
    return handles;
  }

  // Leash's policy-routing rules in the namespace (`ip rule`, proto 76), both families.
  std::string RoutingRules() {
    std::string out;
    for (const char* family : {"-4", "-6"}) {
      auto listed = ns_->Run({"ip", family, "rule", "show"});
      if (!listed.ok()) continue;
      for (absl::string_view line : absl::StrSplit(listed->out, '\n')) {
        if (absl::EndsWith(line, " proto 76")) absl::StrAppend(&out, line, "\n");
      }
    }
    return out;
  }
  // The refusal device's `ip -d link` line, "" when there is none.
  std::string RefusalDevice() {
    auto shown = ns_->Run({"ip", "-d", "link", "show", "leash-inbound"});
    return shown.ok() && shown->exit_code == 0 ? shown->out : "";
  }
  std::string FwmarkAccept() {
    auto read = ns_->Run({"sysctl", "-n", "net.ipv4.tcp_fwmark_accept"});
    return read.ok() ? std::string(absl::StripAsciiWhitespace(read->out)) : "?";
  }

  // `leash teardown` on this leashd's folders, as ExecStopPost runs it.
  absl::StatusOr<RunResult> Teardown() {
    return leash::testing::Run(ns_->ExecSharingMounts(
        {RunfilePath("cli/leash"), "--config=" + leashd_->config_path(),
         "--state-dir=" + leashd_->state_dir(), "--run-dir=" + leashd_->run_dir(),
         "teardown"}));
  }

  // The pids of both sidecars, once both run.
  void RunningSidecars(std::vector<pid_t>& sidecars) {
    ASSERT_TRUE(WaitFor(
        [&] {
          sidecars.clear();
          const leash::v1::StatusResponse status = Status();
          for (const auto& sidecar : status.sidecars()) {
            // A pid of 0 would be kill()'s "my whole process group": the test itself.
            if (sidecar.running() && sidecar.pid() > 0) sidecars.push_back(sidecar.pid());
          }
          return sidecars.size() == 2;
        },
        absl::Seconds(30)))
        << leashd_->Log();
  }

  // SIGKILLs both sidecars (once both run) and leashd: a crash, no stop path run.
  void Crash() {
    std::vector<pid_t> sidecars;
    ASSERT_NO_FATAL_FAILURE(RunningSidecars(sidecars));
    for (pid_t pid : sidecars) kill(pid, SIGKILL);
    kill(leashd_->pid(), SIGKILL);
  }

  const TestAccount* user_ = nullptr;
  // By the name leashd sees.
  std::map<std::string, const TestAccount*> agents_;
  std::unique_ptr<LeashdInstance> leashd_;
};

TEST_F(LeashdTest, WithNoAgentAccountsTheConfiguredUserIsTheOneSubjectOn18443) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  leash::v1::StatusResponse status = Status();
  ASSERT_EQ(status.subjects_size(), 1);
  EXPECT_EQ(status.subjects(0).account(), user_->name());
  EXPECT_EQ(status.subjects(0).port(), 18443u);
  EXPECT_EQ(status.subjects(0).state(), "enforced");
  EXPECT_TRUE(status.single_subject());
  struct stat st;
  EXPECT_NE(stat(leashd_->state_dir().c_str(), &st), 0)
      << "a host with no agent accounts must not get /var/lib/leash";
}

TEST_F(LeashdTest, DiscoversTwoLeashAccountsEachResolvedSeparately) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a", "leash-it-b"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  EXPECT_EQ(SaveProfile("pa", "network: { allow: [\"a.example\"] }\n").exit_code, 0);
  EXPECT_EQ(SaveProfile("pb", "network: { allow: [\"b.example\"] }\n").exit_code, 0);
  RunResult bind_a = Cli({"bind", "agent:leash-it-a", "pa", "--ack", "network.allow:a.example"});
  ASSERT_EQ(bind_a.exit_code, 0) << bind_a.out;
  RunResult bind_b = Cli({"bind", "agent:leash-it-b", "pb", "--ack", "network.allow:b.example"});
  ASSERT_EQ(bind_b.exit_code, 0) << bind_b.out;

  auto subjects = Subjects();
  ASSERT_EQ(subjects.size(), 3u) << leashd_->Log();  // the configured user stays a subject
  EXPECT_EQ(subjects["leash-it-a"].state(), "enforced");
  EXPECT_THAT(subjects["leash-it-a"].profiles(), Contains("agent:leash-it-a=pa"));
  EXPECT_THAT(subjects["leash-it-b"].profiles(), Contains("agent:leash-it-b=pb"));
  // Each resolved separately: a.example for one, b.example for the other, the floor for both.
  RunResult a_to_a = Cli({"check", "network", "a.example:443", "--account", "leash-it-a"});
  RunResult a_to_b = Cli({"check", "network", "b.example:443", "--account", "leash-it-a"});
  RunResult b_to_b = Cli({"check", "network", "b.example:443", "--account", "leash-it-b"});
  EXPECT_EQ(a_to_a.exit_code, 0) << a_to_a.out;
  EXPECT_EQ(a_to_b.exit_code, 1) << a_to_b.out;
  EXPECT_EQ(b_to_b.exit_code, 0) << b_to_b.out;
  // Each has its own chain and port.
  EXPECT_NE(ChainHandles(agents_["leash-it-a"]->uid()), "");
  EXPECT_NE(ChainHandles(agents_["leash-it-b"]->uid()), "");
  EXPECT_NE(subjects["leash-it-a"].port(), subjects["leash-it-b"].port());
}

// An administrator can make an agent account whose name is not UTF-8 (useradd --badname).
// It is still a subject, enforced by its UID under the floor, and shown with \xNN; the other
// subjects and every RPC (whose strings must be UTF-8) go on working.
TEST_F(LeashdTest, AnAgentAccountWhoseNameIsNotUtf8IsEnforcedAndShownEscaped) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a", "leash-it-\xff"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  auto subjects = Subjects();
  ASSERT_EQ(subjects.size(), 3u) << leashd_->Log();
  EXPECT_EQ(subjects["leash-it-a"].state(), "enforced");
  EXPECT_EQ(subjects["leash-it-\\xff"].state(), "enforced") << leashd_->Log();
  EXPECT_NE(ChainHandles(agents_["leash-it-\xff"]->uid()), "");
  EXPECT_NE(ChainHandles(agents_["leash-it-a"]->uid()), "");
  RunResult status = Cli({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.out;
  EXPECT_THAT(status.out, HasSubstr("leash-it-\\xff"));
  // Named as shown, it can be checked like any subject: the floor's verdict, as leash-it-a's.
  RunResult odd = Cli({"check", "network", "x.example:443", "--account", "leash-it-\\xff"});
  RunResult plain = Cli({"check", "network", "x.example:443", "--account", "leash-it-a"});
  EXPECT_EQ(odd.exit_code, plain.exit_code) << odd.out;
  EXPECT_LT(odd.exit_code, 2) << odd.out;
}

TEST_F(LeashdTest, DanglingProfileDeniesOnlyItsSubject) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a", "leash-it-b"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  SaveProfile("pa", "network: { deny: [\"x.example\"] }\n");
  ASSERT_EQ(Cli({"bind", "agent:leash-it-a", "pa"}).exit_code, 0);
  SaveProfile("pb", "network: { deny: [\"y.example\"] }\n");
  ASSERT_EQ(Cli({"bind", "agent:leash-it-b", "pb"}).exit_code, 0);
  RunResult healthy = Cli({"status"});
  EXPECT_EQ(healthy.exit_code, 0) << "status is a health check: all in force\n" << healthy.out;
  EXPECT_THAT(healthy.out, Not(HasSubstr("DEGRADED")));
  // Rule N15: leashd names the host's loopback resolvers (or that it found none).
  EXPECT_THAT(healthy.out, HasSubstr("\nloopback resolvers: ")) << healthy.out;
  RunResult deleted = Cli({"profile", "delete", "pa", "--ack", "dangling:agent:leash-it-a"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out;
  // A subject without its policy: status exits 4 and names it, in text and in --json.
  RunResult degraded = Cli({"status"});
  EXPECT_EQ(degraded.exit_code, 4) << degraded.out;
  EXPECT_THAT(degraded.out, HasSubstr("DEGRADED: leash-it-a is no-policy"));
  RunResult json = Cli({"status", "--json"});
  EXPECT_EQ(json.exit_code, 4) << json.out;
  EXPECT_THAT(json.out, HasSubstr("\"degraded\":[\"leash-it-a is no-policy"));
  EXPECT_THAT(json.out, HasSubstr("\"offline\":false"));
  auto subjects = Subjects();
  EXPECT_EQ(subjects["leash-it-a"].state(), "no-policy") << subjects["leash-it-a"].detail();
  EXPECT_THAT(subjects["leash-it-a"].detail(), HasSubstr("pa"));
  EXPECT_EQ(subjects["leash-it-b"].state(), "enforced");
  EXPECT_EQ(subjects[user_->name()].state(), "enforced");
  // Denied, not unconfined: its chain is still there.
  EXPECT_NE(ChainHandles(agents_["leash-it-a"]->uid()), "");
}

// "The policy is on disk and is not in force, and that is the one state that must not exit
// 0": a service that started with no agent accounts cannot enforce one that appears later, so
// binding it writes the binding but must not read as done.
TEST_F(LeashdTest, AWriteThatIsNotInForceDoesNotExitZero) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());  // no agent accounts: the single-subject path
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  // Every write says so while the agent is not enforced, a profile save included.
  RunResult saved = SaveProfile("pa", "network: { deny: [\"x.example\"] }\n");
  EXPECT_EQ(saved.exit_code, 1) << saved.out;
  EXPECT_THAT(saved.out, HasSubstr("written"));
  EXPECT_THAT(saved.out, HasSubstr("the policy is on disk and is NOT in force"));
  for (int attempt = 0; attempt < 2; ++attempt) {  // not only on the first write
    RunResult bound = Cli({"bind", "agent:leash-it-a", "pa"});
    EXPECT_EQ(bound.exit_code, 1) << bound.out;
    EXPECT_THAT(bound.out, HasSubstr("the policy is on disk and is NOT in force"));
    EXPECT_THAT(bound.out, HasSubstr("agent account(s) leash-it-a are not enforced"));
    RunResult unbound = Cli({"unbind", "agent:leash-it-a"});
    EXPECT_EQ(unbound.exit_code, 1) << unbound.out;
  }
  RunResult reconciled = Cli({"reconcile"});
  EXPECT_EQ(reconciled.exit_code, 1) << reconciled.out;
  EXPECT_THAT(reconciled.out, HasSubstr("the policy on disk is NOT in force"));
}

// "The config path comes from --config/-c or LEASH_CONFIG": a write through leashd can only
// change leashd's own file, so naming another is refused and changes nothing; a read judges
// the named file itself and says so; the same file by another spelling is leashd's.
TEST_F(LeashdTest, AConfigOtherThanLeashdsIsJudgedDirectlyAndNeverWrittenThroughLeashd) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const std::string live = leashd_->config_path();
  const std::string before = ReadAll(live);
  const std::string other = files_->Join("staging.yaml");
  // The same floor, with the network surface in blacklist mode (its allow list then never
  // consulted: a finding validate fails on).
  std::ofstream(other) << absl::StrReplaceAll(before, {{"network: { mode: whitelist",
                                                        "network: { mode: blacklist"}});
  RunResult write = Cli({"--config=" + other, "net", "mode", "blacklist"});
  EXPECT_EQ(write.exit_code, 2) << write.out;
  EXPECT_THAT(write.out, HasSubstr(absl::StrCat("--config names ", other, ", but leashd runs on ",
                                                live)));
  EXPECT_THAT(write.out, HasSubstr("nothing was written"));
  EXPECT_EQ(ReadAll(live), before) << "leashd's floor was changed";
  RunResult bind = Cli({"--config=" + other, "bind", "global", "nothing"});
  EXPECT_EQ(bind.exit_code, 2) << bind.out;

  RunResult validate = Cli({"--config=" + other, "validate"});
  EXPECT_EQ(validate.exit_code, 1) << validate.out;
  EXPECT_THAT(validate.out, HasSubstr(absl::StrCat("judging ", other, " directly")));
  EXPECT_THAT(validate.out, HasSubstr(absl::StrCat(other, ": ")));
  RunResult status = Cli({"--config=" + other, "status"});
  EXPECT_EQ(status.exit_code, 3) << status.out;
  EXPECT_THAT(status.out, HasSubstr(absl::StrCat("(offline: leashd runs on ", live)));

  // leashd's own file, named through a path with a dot in it: a write goes through.
  const std::string dotted =
      absl::StrCat(live.substr(0, live.rfind('/')), "/.", live.substr(live.rfind('/')));
  RunResult same = Cli({"--config=" + dotted, "net", "allow", "more.example", "--ack",
                        "network.allow:more.example"});
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_THAT(ReadAll(live), HasSubstr("more.example"));
  RunResult live_validate = Cli({"validate"});
  EXPECT_THAT(live_validate.out, HasSubstr(absl::StrCat(live, ": ")));
}

// A floor that no longer loads is said as such by status (exit 1), not rendered as an empty
// floor with every enforcer OFF while leashd goes on enforcing the last policy it read.
TEST_F(LeashdTest, StatusSaysTheFloorCannotBeReadRatherThanShowingItEmpty) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  std::ofstream(leashd_->config_path(), std::ios::app) << "network: [this is not a mapping\n";
  RunResult status = Cli({"status"});
  EXPECT_EQ(status.exit_code, 1) << status.out;
  EXPECT_THAT(status.out, HasSubstr("floor: CANNOT BE READ: "));
  EXPECT_THAT(status.out, HasSubstr(leashd_->config_path()));
  EXPECT_THAT(status.out, Not(HasSubstr("enforcers: network OFF")));
  EXPECT_THAT(status.out, HasSubstr("leash-it-a"));
  EXPECT_THAT(status.out, HasSubstr("enforced"));
}

TEST_F(LeashdTest, CheckToolFollowsAFailModeChangeForASubjectWithNoPolicy) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  SaveProfile("pa", "network: { deny: [\"x.example\"] }\n");
  ASSERT_EQ(Cli({"bind", "agent:leash-it-a", "pa"}).exit_code, 0);
  ASSERT_EQ(Cli({"profile", "delete", "pa", "--ack", "dangling:agent:leash-it-a"}).exit_code, 0);
  ASSERT_EQ(Subjects()["leash-it-a"].state(), "no-policy");
  auto check = [&] {
    return Cli({"tool", "check", "read_file", "--account", "leash-it-a",
                "--tools-socket=" + leashd_->tools_socket()});
  };
  // The floor's fail_mode is changed by hand and picked up with SIGHUP, as an operator does.
  auto set_fail_mode = [&](const std::string& from, const std::string& to) {
    // Read before the ofstream opens (and truncates) the file.
    const std::string text = ReadAll(leashd_->config_path());
    std::ofstream(leashd_->config_path())
        << absl::StrReplaceAll(text, {{"fail_mode: " + from, "fail_mode: " + to}});
    const uint64_t passes = Status().reconcile_passes();
    ASSERT_TRUE(leashd_->Sighup().ok());
    ASSERT_TRUE(leashd_->WaitForPasses(passes + 1).ok());
  };
  RunResult closed = check();
  EXPECT_EQ(closed.exit_code, 1) << closed.out;

  ASSERT_NO_FATAL_FAILURE(set_fail_mode("closed", "open"));
  RunResult opened = check();
  EXPECT_EQ(opened.exit_code, 0) << opened.out;

  ASSERT_NO_FATAL_FAILURE(set_fail_mode("open", "closed"));
  RunResult closed_again = check();
  EXPECT_EQ(closed_again.exit_code, 1) << closed_again.out;
}

TEST_F(LeashdTest, SighupAfterOneBindingChangesReappliesOnlyThatSubject) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a", "leash-it-b"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  SaveProfile("tight", "network: { deny: [\"t.example\"] }\n");
  SaveProfile("tighter", "network: { deny: [\"t.example\", \"u.example\"] }\n");
  ASSERT_EQ(Cli({"bind", "agent:leash-it-a", "tight"}).exit_code, 0);
  ASSERT_EQ(Cli({"bind", "agent:leash-it-b", "tight"}).exit_code, 0);
  const uint32_t a = agents_["leash-it-a"]->uid();
  const uint32_t b = agents_["leash-it-b"]->uid();
  const std::string a_before = ChainHandles(a);
  const std::string b_before = ChainHandles(b);
  ASSERT_NE(a_before, "");

  // Written without a reconcile, then picked up by SIGHUP — Sentinel's path on a host
  // without systemd (the pidfile under the run folder).
  ASSERT_EQ(Cli({"bind", "agent:leash-it-a", "tighter", "--no-reconcile"}).exit_code, 0);
  EXPECT_EQ(ChainHandles(a), a_before) << "--no-reconcile must leave the service unchanged";
  const uint64_t passes = Status().reconcile_passes();
  ASSERT_TRUE(leashd_->Sighup().ok());
  ASSERT_TRUE(leashd_->WaitForPasses(passes + 1).ok());
  leash::v1::StatusResponse status = Status();
  ASSERT_EQ(status.last_reconcile().changes_size(), 1) << status.last_reconcile().DebugString();
  EXPECT_EQ(status.last_reconcile().changes(0).account(), "leash-it-a");
  EXPECT_EQ(status.last_reconcile().changes(0).change(), "reapplied");
  EXPECT_NE(ChainHandles(a), a_before) << "the changed subject's chain was not re-applied";
  EXPECT_EQ(ChainHandles(b), b_before) << "an unchanged subject was touched";
}

TEST_F(LeashdTest, CorruptPortMapChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t a = agents_["leash-it-a"]->uid();
  const std::string before = ChainHandles(a);
  const auto subjects_before = Subjects();
  std::ofstream(leashd_->state_dir() + "/ports.json") << "{\"format\":1,";
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-b"}));
  const uint64_t passes = Status().reconcile_passes();
  ASSERT_TRUE(leashd_->Sighup().ok());
  ASSERT_TRUE(leashd_->WaitForPasses(passes + 1).ok());
  leash::v1::StatusResponse status = Status();
  EXPECT_THAT(status.last_reconcile().error(), HasSubstr("is corrupt"));
  EXPECT_THAT(status.last_reconcile().error(), HasSubstr("nothing was changed"));
  EXPECT_EQ(status.subjects_size(), static_cast<int>(subjects_before.size()));
  EXPECT_EQ(ChainHandles(a), before);
  EXPECT_EQ(ChainHandles(agents_["leash-it-b"]->uid()), "") << "a new subject was onboarded";
}

TEST_F(LeashdTest, BurstOfTwentySighupsIsCoalesced) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint64_t passes = Status().reconcile_passes();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(leashd_->Sighup().ok());
  ASSERT_TRUE(leashd_->WaitForPasses(passes + 1).ok());
  absl::SleepFor(absl::Seconds(1));  // let any pass the burst could still cause start and end
  const uint64_t ran = Status().reconcile_passes() - passes;
  EXPECT_GE(ran, 1u);
  EXPECT_LE(ran, 3u) << "20 SIGHUPs ran " << ran << " passes";
}

TEST_F(LeashdTest, NonRootClientIsRefusedOnTheAdminSocket) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  auto outsider = TestAccount::Create(UniqueAccountName("lctl-outsider"));
  ASSERT_TRUE(outsider.ok());
  auto probe = leash::testing::Run((*outsider)->AsUser(
      {RunfilePath("controlplane/testing/admin_probe"), leashd_->admin_socket()}));
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(probe->exit_code, 1) << probe->out;
  struct stat st;
  ASSERT_EQ(stat(leashd_->admin_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(LeashdTest, ReflectionListsTheServicesOnBothSockets) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  auto admin = ListServicesByReflection(leashd_->admin_socket());
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_THAT(*admin, Contains("leash.v1.Control"));
  EXPECT_THAT(*admin, Contains("leash.v1.PolicyStream"));
  auto tools = ListServicesByReflection(leashd_->tools_socket());
  ASSERT_TRUE(tools.ok()) << tools.status();
  EXPECT_THAT(*tools, Contains("leash.v1.Tools"));
  EXPECT_THAT(*tools, ::testing::Not(Contains("leash.v1.Control")));
}

// Under systemd (Type=notify) leashd says READY=1 only once its first reconcile has put every
// subject in force, then feeds the watchdog (WATCHDOG_USEC of 2 s: every second), and says
// STOPPING=1 on its way out; all through $NOTIFY_SOCKET, a datagram socket as systemd's.
TEST_F(LeashdTest, SystemdIsToldReadyOnceEverySubjectIsInForceAndItsWatchdogIsFed) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  const std::string path =
      absl::StrCat("/tmp/leash-notify-", getpid(), "-", absl::ToUnixMicros(absl::Now()));
  // Read from the start, as systemd reads: leashd also stores its port sockets here (FDSTORE=1)
  // before it is ready, and those messages are the store's, not read below.
  FakeNotifySocket notify(path);
  ASSERT_TRUE(notify.bound()) << path;
  auto receive = [&] {
    const std::string got = notify.NextMessage(absl::Seconds(5));
    return got.empty() ? std::string("<nothing in 5 s>") : got;
  };
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  setenv("WATCHDOG_USEC", "2000000", 1);
  StartLeashd();
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  if (!HasFatalFailure()) {
    const std::string ready = receive();
    EXPECT_THAT(ready, HasSubstr("READY=1")) << leashd_->Log();
    EXPECT_THAT(ready, HasSubstr(absl::StrCat("MAINPID=", leashd_->pid())));
    // Ready means in force: the agent's subject is enforced, its chain applied.
    EXPECT_EQ(Subjects()["leash-it-a"].state(), "enforced");
    EXPECT_NE(ChainHandles(agents_["leash-it-a"]->uid()), "");
    EXPECT_EQ(receive(), "WATCHDOG=1");
    EXPECT_EQ(receive(), "WATCHDOG=1");
    auto stopped = leashd_->Stop();
    ASSERT_TRUE(stopped.ok());
    std::string last;
    for (std::string got = receive(); got != "<nothing in 5 s>"; got = receive()) last = got;
    EXPECT_EQ(last, "STOPPING=1");
  }
  EXPECT_GT(notify.size(), 0u) << "leashd stored none of its port sockets";
}

TEST_F(LeashdTest, StopReleasesEveryChain) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t a = agents_["leash-it-a"]->uid();
  ASSERT_NE(ChainHandles(a), "");
  // The inbound drop's policy routing (controlplane/inbound_routing.h): one refusal of a's
  // own UID per family.
  const std::string refusal = absl::StrCat("uidrange ", a, "-", a, " lookup ", a, " prohibit");
  std::string routed = RoutingRules();
  size_t at = routed.find(refusal);
  ASSERT_NE(at, std::string::npos) << routed;
  at = routed.find(refusal, at + 1);
  ASSERT_NE(at, std::string::npos) << routed;
  EXPECT_EQ(routed.find(refusal, at + 1), std::string::npos) << routed;
  // Its counted refusal, through its own table, out of the refusal device.
  EXPECT_THAT(routed, HasSubstr(absl::StrCat("uidrange ", a, "-", a, " lookup ",
                                             a | 0x80000000u, " proto 76")));
  EXPECT_THAT(RefusalDevice(), HasSubstr("ifb"));
  EXPECT_EQ(FwmarkAccept(), "1");
  auto stopped = leashd_->Stop();
  ASSERT_TRUE(stopped.ok());
  EXPECT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << leashd_->Log();
  EXPECT_EQ(ChainHandles(a), "");
  EXPECT_EQ(ChainHandles(user_->uid()), "");
  EXPECT_EQ(RoutingRules(), "");
  EXPECT_EQ(RefusalDevice(), "");
  EXPECT_EQ(FwmarkAccept(), "0");
}

TEST_F(LeashdTest, TeardownReleasesEveryChainAfterACrash) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t a = agents_["leash-it-a"]->uid();
  ASSERT_NE(ChainHandles(a), "");
  // A crash that took the sidecars too: no stop path ran, and nothing is left to stop.
  ASSERT_NO_FATAL_FAILURE(Crash());
  leashd_->Stop().IgnoreError();
  ASSERT_NE(ChainHandles(a), "") << "the chains were released without a stop path";
  ASSERT_NE(RoutingRules(), "") << "the routing was released without a stop path";
  // On the crashed leashd's own folders: its lock went with it.
  auto teardown = Teardown();
  ASSERT_TRUE(teardown.ok());
  EXPECT_EQ(teardown->exit_code, 0) << teardown->out;
  EXPECT_THAT(teardown->out, HasSubstr("released"));
  EXPECT_EQ(ChainHandles(a), "");
  EXPECT_EQ(ChainHandles(user_->uid()), "");
  EXPECT_EQ(RoutingRules(), "");
  EXPECT_EQ(RefusalDevice(), "");
  EXPECT_EQ(FwmarkAccept(), "0");
}

TEST_F(LeashdTest, AFloorEditThroughTheCliKeepsTheOperatorsComments) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const std::string commented =
      "# Fido's floor: ask #infra before loosening it.\n" + ReadAll(leashd_->config_path());
  std::ofstream(leashd_->config_path()) << commented;

  const RunResult added =
      Cli({"network", "allow", "added.example", "--ack", "network.allow:added.example"});
  EXPECT_EQ(added.exit_code, 0) << added.out;
  EXPECT_THAT(added.out, ::testing::Not(HasSubstr("rewritten whole")));
  EXPECT_EQ(ReadAll(leashd_->config_path()),
            absl::StrReplaceAll(commented, {{"allow: [\"floor.example\"]",
                                             "allow: [\"floor.example\", \"added.example\"]"}}));
  EXPECT_THAT(Status().floor().network().allow().entries(), Contains("added.example"));
}

TEST_F(LeashdTest, TeardownRefusesWhileLeashdRunsAndReleasesNothing) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t a = agents_["leash-it-a"]->uid();
  const std::string handles = ChainHandles(a);
  ASSERT_NE(handles, "");
  auto teardown = Teardown();
  ASSERT_TRUE(teardown.ok());
  EXPECT_EQ(teardown->exit_code, 1) << teardown->out;
  EXPECT_THAT(teardown->out, HasSubstr(absl::StrCat("leash teardown: a leashd is running on ",
                                                    leashd_->run_dir(), " (pid ")));
  EXPECT_THAT(teardown->out, HasSubstr("nothing released"));
  EXPECT_EQ(ChainHandles(a), handles);
  EXPECT_EQ(Subjects()["leash-it-a"].state(), "enforced");
}

TEST_F(LeashdTest, ASecondLeashdOnTheSameFoldersRefusesAndLeavesTheFirstAlone) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const std::string pidfile = leashd_->run_dir() + "/leashd.pid";
  std::string first_pid;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::ifstream in(pidfile);
        return static_cast<bool>(std::getline(in, first_pid)) && !first_pid.empty();
      },
      absl::Seconds(30)));
  struct stat socket_before {};
  ASSERT_EQ(stat(leashd_->admin_socket().c_str(), &socket_before), 0);
  const leash::v1::StatusResponse before = Status();
  ASSERT_EQ(before.sidecars_size(), 2);

  auto second = leash::testing::Run(leashd_->argv(), absl::Seconds(60));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->exit_code, 1) << second->out;
  EXPECT_THAT(second->out,
              HasSubstr(absl::StrCat("not starting: a leashd is running on ",
                                     leashd_->run_dir(), " (pid ", first_pid,
                                     "), or `leash teardown` is releasing its chains. Stop it "
                                     "first")));
  EXPECT_THAT(second->out, HasSubstr("send it SIGHUP instead"));

  // The first keeps its socket (the same file, not a new one bound over it), its pidfile,
  // its sidecars and its chains.
  struct stat socket_after {};
  ASSERT_EQ(stat(leashd_->admin_socket().c_str(), &socket_after), 0);
  EXPECT_EQ(socket_after.st_ino, socket_before.st_ino);
  std::ifstream in(pidfile);
  std::string pid_now;
  std::getline(in, pid_now);
  EXPECT_EQ(pid_now, first_pid);
  const leash::v1::StatusResponse after = Status();
  ASSERT_EQ(after.sidecars_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(after.sidecars(i).running());
    EXPECT_EQ(after.sidecars(i).pid(), before.sidecars(i).pid());
  }
  EXPECT_NE(ChainHandles(agents_["leash-it-a"]->uid()), "");
}

// The nftables tables and the proxy ports belong to the network namespace, not to a folder:
// a second leashd there on other folders would re-apply the same UIDs' chains, and its stop (or
// a teardown on its folders) would release them under the first, leaving the first's agents
// unconfined while it reports them enforced. It refuses, and so does such a teardown.
TEST_F(LeashdTest, ASecondLeashdInTheSameNetworkNamespaceRefusesEvenOnOtherFolders) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t a = agents_["leash-it-a"]->uid();
  const std::string handles = ChainHandles(a);
  ASSERT_NE(handles, "");
  auto other = TempDir::Create("lid-other");
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(mkdir((*other)->Join("run").c_str(), 0755), 0);
  std::vector<std::string> argv = leashd_->argv();
  for (std::string& arg : argv) {
    if (absl::StartsWith(arg, "--state-dir=")) arg = "--state-dir=" + (*other)->Join("state");
    if (absl::StartsWith(arg, "--run-dir=")) arg = "--run-dir=" + (*other)->Join("run");
  }
  const std::string log = (*other)->Join("leashd.log");
  auto second = Background::Start(argv, log);
  ASSERT_TRUE(second.ok());
  absl::StatusOr<int> ended = second->Wait(absl::Seconds(30));
  ASSERT_TRUE(ended.ok()) << "the second leashd is still running:\n" << ReadAll(log);
  EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 1) << ReadAll(log);
  EXPECT_THAT(ReadAll(log),
              HasSubstr(absl::StrCat("not starting: a leashd is running in this network namespace (pid ",
                                     leashd_->pid())))
      << ReadAll(log);

  auto teardown = leash::testing::Run(ns_->ExecSharingMounts(
      {RunfilePath("cli/leash"), "--config=" + leashd_->config_path(),
       "--state-dir=" + (*other)->Join("state"), "--run-dir=" + (*other)->Join("run"),
       "teardown"}));
  ASSERT_TRUE(teardown.ok());
  EXPECT_EQ(teardown->exit_code, 1) << teardown->out;
  EXPECT_THAT(teardown->out, HasSubstr("leash teardown: a leashd is running in this network namespace (pid "));
  EXPECT_THAT(teardown->out, HasSubstr("nothing released"));

  EXPECT_EQ(ChainHandles(a), handles);
  EXPECT_EQ(Subjects()["leash-it-a"].state(), "enforced");
}

TEST_F(LeashdTest, AfterACrashLeashdStartsAgainOnTheSameFolders) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  // A crash: leashd and its sidecars killed, no stop path run. The one-instance lock must not
  // outlive it.
  ASSERT_NO_FATAL_FAILURE(Crash());
  leashd_->Stop().IgnoreError();
  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  leash::v1::StatusResponse status;
  EXPECT_TRUE(WaitFor(
      [&] {
        status = Status();
        int running = 0;
        for (const auto& sidecar : status.sidecars()) running += sidecar.running() ? 1 : 0;
        return running == 2;
      },
      absl::Seconds(30)))
      << leashd_->Log();
  bool subject = false;
  for (const auto& s : status.subjects()) subject = subject || s.account() == "leash-it-a";
  EXPECT_TRUE(subject) << leashd_->Log();
  EXPECT_NE(ChainHandles(agents_["leash-it-a"]->uid()), "");
}

// The state letter /proc/<pid>/stat gives (R, S, T, Z, ...), or '\0' when there is no such
// process.
char ProcessState(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(in, stat)) return '\0';
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return '\0';
  return stat[close_paren + 2];
}

// Whether `pid` is a live process (not gone, not a zombie nobody has reaped yet).
bool Alive(pid_t pid) {
  const char state = ProcessState(pid);
  return state != '\0' && state != 'Z' && state != 'X';
}

// Under systemd's KillMode=process a leashd that dies leaves its sidecars running: the watchers
// hold the fanotify group (closing it would allow every pending open), and the next leashd takes
// it over. `leash teardown`, which an operator runs to release everything, stops them first:
// a watcher left enforcing the last map would go on denying after every chain is released.
TEST_F(LeashdTest, TeardownStopsTheSidecarsADeadLeashdLeftAndReleasesEveryChain) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const uint32_t a = agents_["leash-it-a"]->uid();
  std::vector<pid_t> sidecars;
  ASSERT_NO_FATAL_FAILURE(RunningSidecars(sidecars));
  // leashd alone dies, as systemd's KillMode=process leaves it.
  ASSERT_EQ(kill(leashd_->pid(), SIGKILL), 0);
  leashd_->Stop().IgnoreError();
  for (pid_t pid : sidecars) {
    ASSERT_TRUE(Alive(pid)) << "sidecar " << pid << " did not outlive leashd";
  }
  auto teardown = Teardown();
  ASSERT_TRUE(teardown.ok());
  EXPECT_EQ(teardown->exit_code, 0) << teardown->out;
  for (pid_t pid : sidecars) {
    EXPECT_THAT(teardown->out,
                HasSubstr(absl::StrCat("(pid ", pid, ") that a previous leashd left running")));
    EXPECT_FALSE(Alive(pid)) << "sidecar " << pid << " still runs after teardown\n"
                             << teardown->out;
  }
  EXPECT_THAT(teardown->out, HasSubstr("released"));
  EXPECT_EQ(ChainHandles(a), "");
  EXPECT_EQ(RoutingRules(), "");
}

TEST_F(LeashdTest, SidecarsLeftByAKilledLeashdAreStoppedByTheNextOne) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  std::map<std::string, pid_t> old;
  ASSERT_TRUE(WaitFor(
      [&] {
        old.clear();
        const leash::v1::StatusResponse status = Status();
        for (const auto& sidecar : status.sidecars()) {
          if (sidecar.running() && sidecar.pid() > 0) old[sidecar.name()] = sidecar.pid();
        }
        return old.size() == 2;
      },
      absl::Seconds(30)));
  // leashd alone is killed: no stop path, no systemd to kill the rest of the cgroup.
  kill(leashd_->pid(), SIGKILL);
  leashd_->Stop().IgnoreError();
  for (const auto& [name, pid] : old) EXPECT_TRUE(Alive(pid)) << name << " died with leashd";

  ASSERT_TRUE(leashd_->Relaunch().ok()) << leashd_->Log();
  for (const auto& [name, pid] : old) {
    // "stopped" after SIGTERM, or "killed" when it took over 2 s (a loaded machine).
    EXPECT_THAT(leashd_->Log(),
                ::testing::AnyOf(
                    HasSubstr(absl::StrCat("stopped ", name, " (pid ", pid,
                                           ") that a previous leashd left running")),
                    HasSubstr(absl::StrCat("killed ", name, " (pid ", pid,
                                           ") that a previous leashd left running"))));
    EXPECT_FALSE(Alive(pid)) << name;
  }
  // The new sidecars run, and the new proxy holds the subject's port: enforced, not denied
  // everything for a listener that would not bind.
  EXPECT_TRUE(WaitFor(
      [&] {
        const leash::v1::StatusResponse status = Status();
        int fresh = 0;
        for (const auto& sidecar : status.sidecars()) {
          fresh += sidecar.running() && sidecar.pid() != static_cast<uint32_t>(old[sidecar.name()])
                       ? 1
                       : 0;
        }
        return fresh == 2;
      },
      absl::Seconds(30)))
      << leashd_->Log();
  const std::map<std::string, leash::v1::SubjectStatus> subjects = Subjects();
  ASSERT_EQ(subjects.count("leash-it-a"), 1u);
  EXPECT_EQ(subjects.at("leash-it-a").state(), "enforced")
      << subjects.at("leash-it-a").detail() << "\n" << leashd_->Log();
}

// The watcher's pid as leashd reports it, or 0.
uint32_t WatcherPid(const leash::v1::StatusResponse& status) {
  for (const auto& sidecar : status.sidecars()) {
    if (sidecar.name() == "leash-fswatch" && sidecar.running()) return sidecar.pid();
  }
  return 0;
}

class WatcherFaultTest : public LeashdTest {
 protected:
  void SetUp() override {
    LeashdTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a"}));
    ASSERT_NO_FATAL_FAILURE(StartLeashd());
    mkdir((fs_->path() + "/secret").c_str(), 0755);
    std::ofstream(fs_->path() + "/secret/x") << "x";
    std::ofstream(fs_->path() + "/open.txt") << "o";
    chmod((fs_->path() + "/secret/x").c_str(), 0644);
    chmod((fs_->path() + "/open.txt").c_str(), 0644);
    ASSERT_NE(WaitForStandby(), 0) << leashd_->Log();
  }
  // The agent's read of `relative` on the tmpfs, from leashd's mount namespace while leashd
  // runs (see InItsMounts).
  RunResult AgentReads(const std::string& relative) {
    std::vector<std::string> argv =
        agents_["leash-it-a"]->AsUser({"cat", fs_->path() + "/" + relative});
    if (leashd_ != nullptr && !leashd_->stopped()) argv = leashd_->InItsMounts(argv);
    auto read = leash::testing::Run(argv);
    EXPECT_TRUE(read.ok());
    return read.ok() ? *read : RunResult();
  }
  // The agent's read of the denied file: EPERM while the watcher enforces.
  RunResult AgentReadsSecret() { return AgentReads("secret/x"); }
  // The agent's read of a file the policy allows: it succeeds while the watcher enforces, which
  // shows the denial above comes from the policy and not from where the agent stands.
  void ExpectAgentReadsAllowedFile() {
    RunResult read = AgentReads("open.txt");
    EXPECT_EQ(read.exit_code, 0) << read.out << leashd_->Log();
  }
  // The pid of the watcher's standby once leashd says it is ready (0 after 30 s without).
  pid_t WaitForStandby(pid_t not_this = 0) {
    pid_t ready = 0;
    WaitFor(
        [&] {
          const std::string log = leashd_->Log();
          for (size_t at = log.find("leash-fswatch standby (pid "); at != std::string::npos;
               at = log.find("leash-fswatch standby (pid ", at + 1)) {
            const size_t digits = at + strlen("leash-fswatch standby (pid ");
            const size_t close = log.find(") ready", digits);
            pid_t pid = 0;
            if (close != std::string::npos && close - digits < 10 &&
                absl::SimpleAtoi(log.substr(digits, close - digits), &pid) && pid != not_this) {
              ready = pid;
            }
          }
          return ready != 0;
        },
        absl::Seconds(30));
    return ready;
  }
  // The agent reads the denied file in a tight loop for `seconds`, in the background; each read
  // that succeeded prints OPENED into `out`, and DONE at the end.
  absl::StatusOr<Background> AgentStorm(int seconds, const std::string& out) {
    return Background::Start(
        leashd_->InItsMounts(agents_["leash-it-a"]->AsUser(
            {"sh", "-c",
             absl::StrCat("end=$(($(date +%s)+", seconds, ")); n=0; while [ $(date +%s) -lt $end ]; "
                          "do cat ", fs_->path(), "/secret/x >/dev/null 2>&1 && echo OPENED; "
                          "n=$((n+1)); done; echo DONE $n")})),
        out);
  }
  // Waits for a watcher other than `old` to be running with the current map in force.
  uint32_t WaitForNewWatcher(uint32_t old) {
    uint32_t now = 0;
    WaitFor(
        [&] {
          leash::v1::StatusResponse status = Status();
          now = WatcherPid(status);
          for (const auto& sidecar : status.sidecars()) {
            if (sidecar.name() == "leash-fswatch" && now != 0 && now != old &&
                sidecar.acked_version() >= status.map_version()) {
              return true;
            }
          }
          return false;
        },
        absl::Seconds(30));
    return now;
  }
};

// The watcher killed during the agent's loop of reads of a denied file: the fanotify group is
// leashd's, so nothing is answered allow; the standby takes over and the loop goes on denied.
TEST_F(WatcherFaultTest, KilledWatcherIsTakenOverByItsStandbyAndNoDeniedReadGetsThrough) {
  RunResult before = AgentReadsSecret();
  ASSERT_NE(before.exit_code, 0);
  ASSERT_THAT(before.out, HasSubstr("Operation not permitted"));
  ExpectAgentReadsAllowedFile();
  const uint32_t old = WatcherPid(Status());
  ASSERT_NE(old, 0u);
  const pid_t standby = WaitForStandby();
  const std::string out = absl::StrCat(getenv("TEST_TMPDIR"), "/killed-storm.out");
  auto storm = AgentStorm(4, out);
  ASSERT_TRUE(storm.ok());
  absl::SleepFor(absl::Milliseconds(1500));
  ASSERT_EQ(kill(static_cast<pid_t>(old), SIGKILL), 0);
  ASSERT_TRUE(storm->Wait(absl::Seconds(60)).ok()) << "the agent's loop hung after the kill";
  const std::string storm_out = ReadAll(out);
  EXPECT_THAT(storm_out, HasSubstr("DONE"));
  EXPECT_THAT(storm_out, ::testing::Not(HasSubstr("OPENED"))) << storm_out;
  const uint32_t fresh = WaitForNewWatcher(old);
  EXPECT_EQ(fresh, static_cast<uint32_t>(standby)) << leashd_->Log();
  RunResult after = AgentReadsSecret();
  EXPECT_NE(after.exit_code, 0);
  EXPECT_THAT(after.out, HasSubstr("Operation not permitted"));
  ExpectAgentReadsAllowedFile();
  EXPECT_THAT(leashd_->Log(), HasSubstr("handed leash-fswatch to its standby"));
  // A new standby follows, spawned while the new watcher answers its exec.
  EXPECT_NE(WaitForStandby(standby), 0) << leashd_->Log();
}

// The watcher stopped (SIGSTOP): leashd kills it on its missed heartbeats (2 s) and hands the
// group to the standby. Meanwhile an unrelated process's open waits, and the agent's reads of
// the denied file all fail.
TEST_F(WatcherFaultTest, StoppedWatcherIsKilledOnAMissedHeartbeatAndItsStandbyTakesOver) {
  const uint32_t old = WatcherPid(Status());
  ASSERT_NE(old, 0u);
  const pid_t standby = WaitForStandby();
  const std::string out = absl::StrCat(getenv("TEST_TMPDIR"), "/stopped-storm.out");
  auto storm = AgentStorm(6, out);
  ASSERT_TRUE(storm.ok());
  absl::SleepFor(absl::Milliseconds(1000));
  ASSERT_EQ(kill(static_cast<pid_t>(old), SIGSTOP), 0);
  // kill() returns before the watcher stops: until it does, it may still read the next event,
  // and an event it read but had not yet attributed to a UID is answered by its successor under
  // the strictest fail_mode of the map (closed here; watcher_test covers that rule). The host's
  // open below is issued once the watcher can read nothing more, so it is the standby's to judge.
  ASSERT_TRUE(WaitFor([&] { return ProcessState(static_cast<pid_t>(old)) == 'T'; },
                      absl::Seconds(10)))
      << "the watcher did not stop";
  const absl::Time start = absl::Now();
  auto opened = leash::testing::Run({"cat", fs_->path() + "/open.txt"}, absl::Seconds(30));
  const absl::Duration waited = absl::Now() - start;
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->exit_code, 0) << opened->out;
  // The bound is the 2 s heartbeat timeout plus a poll and the takeover; asserted generously
  // (correctness: the host is not held for good). Measured in docs/PERFORMANCE.md.
  EXPECT_LT(waited, absl::Seconds(10)) << "the host waited " << waited;
  ASSERT_TRUE(storm->Wait(absl::Seconds(60)).ok()) << "the agent's loop hung";
  const std::string storm_out = ReadAll(out);
  EXPECT_THAT(storm_out, HasSubstr("DONE"));
  EXPECT_THAT(storm_out, ::testing::Not(HasSubstr("OPENED"))) << storm_out;
  const uint32_t fresh = WaitForNewWatcher(old);
  EXPECT_EQ(fresh, static_cast<uint32_t>(standby)) << leashd_->Log();
  EXPECT_THAT(leashd_->Log(), HasSubstr("stopped sending heartbeats"));
  RunResult after = AgentReadsSecret();
  EXPECT_NE(after.exit_code, 0) << leashd_->Log();
  EXPECT_THAT(after.out, HasSubstr("Operation not permitted"));
  ExpectAgentReadsAllowedFile();
}

// leashd's stop releases the host: the reading watcher and its standby both stop, and leashd
// closes the group it kept. Any holder of the group left behind (a standby not stopped) would
// keep it open with its marks and nobody reading, holding every open on the filesystem.
TEST_F(WatcherFaultTest, StoppingLeashdClosesTheGroupAndReleasesTheFilesystem) {
  ASSERT_NE(AgentReadsSecret().exit_code, 0);
  const absl::StatusOr<int> stopped = leashd_->Stop();
  ASSERT_TRUE(stopped.ok()) << leashd_->Log();
  auto opened = leash::testing::Run({"cat", fs_->path() + "/open.txt"}, absl::Seconds(10));
  ASSERT_TRUE(opened.ok());
  EXPECT_FALSE(opened->timed_out) << "an open on the marked tmpfs still waits after leashd stopped";
  EXPECT_EQ(opened->exit_code, 0) << opened->out;
  // Nothing enforces any more: the closed group released the host (rule F4).
  RunResult after = AgentReadsSecret();
  EXPECT_EQ(after.exit_code, 0) << after.out;
}

// The peak resident memory leashd has reached, in KiB (VmHWM), and a reset of that peak.
int64_t PeakKib(pid_t pid) {
  for (absl::string_view line :
       absl::StrSplit(ReadAll(absl::StrCat("/proc/", pid, "/status")), '\n')) {
    if (absl::ConsumePrefix(&line, "VmHWM:")) {
      int64_t kib = 0;
      if (absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kib)) {
        return kib;
      }
    }
  }
  return -1;
}
void ResetPeak(pid_t pid) {
  std::ofstream(absl::StrCat("/proc/", pid, "/clear_refs")) << "5";
}

// Whether the decision log `log` has a line under `uid` whose text contains `text`.
bool HasDecisionLine(const std::string& log, absl::string_view text, uint32_t uid) {
  const std::string uid_field = absl::StrCat("\"uid\":", uid, ",");
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, text) && absl::StrContains(line, uid_field)) return true;
  }
  return false;
}

// One summary line of tools_flood as fields: channels, answered_channels, calls, codes.
std::map<std::string, std::string> FloodSummary(const std::string& out) {
  std::map<std::string, std::string> fields;
  for (absl::string_view word : absl::StrSplit(absl::StripAsciiWhitespace(out), ' ')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(word, absl::MaxSplits('=', 1));
    fields[kv.first] = kv.second;
  }
  return fields;
}

// One CheckTool call of read_file (which the test floor allows) as `agent`, through
// tools_flood; its summary, empty when it could not run.
std::map<std::string, std::string> OneToolCall(const TestAccount& agent,
                                               const std::string& tools_socket) {
  auto run = leash::testing::Run(
      agent.AsUser({RunfilePath("test/leashd/tools_flood"), tools_socket, "--seconds=0"}),
      absl::Seconds(60));
  return run.ok() ? FloodSummary(run->out) : std::map<std::string, std::string>();
}

// An agent is the untrusted party, and it can reach the tools socket: nothing it does there may
// run leashd out of memory or keep another agent's calls from being answered. The flooding
// account opens 16 connections with 16 calls of almost 4 MiB in flight on each (1 GiB at once
// if nothing bounded it).
TEST_F(LeashdTest, AnAgentFloodingTheToolsSocketIsBoundedAndStarvesNoOtherAgent) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a", "leash-it-b"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  // In production agents reach the socket through its group (--tools-group); the test
  // accounts are in no common group, so the socket is opened to every account here.
  ASSERT_EQ(chmod(leashd_->tools_socket().c_str(), 0666), 0);
  const std::string flood_binary = RunfilePath("test/leashd/tools_flood");
  auto one_call = [&](const std::string& agent) {
    return OneToolCall(*agents_[agent], leashd_->tools_socket());
  };
  ASSERT_EQ(one_call("leash-it-b")["codes"], "0:1") << "read_file is allowed by the floor";

  ResetPeak(leashd_->pid());
  const int64_t before = PeakKib(leashd_->pid());
  ASSERT_GT(before, 0);
  const std::string flood_log = files_->Join("flood.out");
  auto flood = Background::Start(
      agents_["leash-it-a"]->AsUser({flood_binary, leashd_->tools_socket(), "--connections=16",
                                     "--streams=16", "--bytes=4190000", "--seconds=6"}),
      flood_log);
  ASSERT_TRUE(flood.ok()) << flood.status();
  // The other agent's calls are answered all through the flood.
  int answered_during = 0;
  while (flood->Running()) {
    std::map<std::string, std::string> b = one_call("leash-it-b");
    EXPECT_EQ(b["codes"], "0:1") << "leash-it-b's call during the flood";
    if (flood->Running()) ++answered_during;
  }
  EXPECT_GE(answered_during, 1) << "the flood ended before another agent could call";
  std::map<std::string, std::string> a = FloodSummary(ReadAll(flood_log));
  const int64_t peak_mib = (PeakKib(leashd_->pid()) - before) / 1024;
  std::cout << "flood: " << ReadAll(flood_log) << "leashd's peak rose by " << peak_mib
            << " MiB; leash-it-b answered " << answered_during << " times during it\n";
  int answered_channels = 0;
  ASSERT_TRUE(absl::SimpleAtoi(a["answered_channels"], &answered_channels)) << ReadAll(flood_log);
  // 8 connections per account (--tools-connections-per-account), the rest refused.
  EXPECT_GE(answered_channels, 1);
  EXPECT_LE(answered_channels, 8);
  EXPECT_THAT(leashd_->Log(), HasSubstr("connections to the tools socket"));
  // 8 calls in flight per account (--tools-calls-per-account); calls over it are refused unread
  // with RESOURCE_EXHAUSTED (8), and the decision log says so under the flooding account.
  EXPECT_THAT(absl::StrCat(",", a["codes"]), HasSubstr(",8:"));
  EXPECT_TRUE(WaitFor(
      [&] {
        return HasDecisionLine(ReadAll(files_->Join("decisions.jsonl")),
                               "calls in flight, the most one account may",
                               agents_["leash-it-a"]->uid());
      },
      absl::Seconds(10)))
      << ReadAll(files_->Join("decisions.jsonl"));
  // 8 calls x 4 MiB (--tools-max-request-bytes) is 32 MiB of requests, each held twice while
  // judged (gRPC's buffer and the parsed request): 64 MiB. Refused calls whose data had started
  // to arrive hold what their stream windows let in until gRPC ends them (up to 96 alive), and
  // the allocator keeps some (docs/PERFORMANCE.md has the measured figure, with and without
  // the limits).
  EXPECT_LE(peak_mib, 192) << "leashd's peak resident memory rose by " << peak_mib << " MiB";

  // The flood's connections are released with it: the same account is admitted again.
  EXPECT_TRUE(WaitFor([&] { return one_call("leash-it-a")["codes"] == "0:1"; },
                      absl::Seconds(20)))
      << leashd_->Log();
}

// A caller that never reads its socket, never opens its flow-control window and never
// acknowledges the server's HTTP/2 SETTINGS. gRPC 1.51 enforces the calls-per-connection cap
// (SETTINGS_MAX_CONCURRENT_STREAMS) only once the client has acknowledged it, and reads every
// call opened before that far ahead of leashd's handlers, so without more the cut would come
// after a number of calls set by a race. leashd's relay on the tools socket
// (controlplane/connection_relay.h) lets through at most --tools-calls-per-account (8) calls
// opened before that acknowledgement; the caller's next ones are held in the relay's fixed
// buffer, and when it is full the caller's connections are cut. So at most 8 of its calls reach
// gRPC; the caller's `cut_after` (what it could send before the cut) is set by the kernel's
// socket buffers, not by leashd's memory. After an acknowledgement gRPC enforces the cap itself,
// and the cuts in the tools service (more calls alive than four shares and a slack, or a call
// opened while the connection is unread) bound the rest; docs/PERFORMANCE.md has the figures.
class UnreadingCallerTest : public LeashdTest {
 protected:
  // Runs h2_unread_calls as leash-it-a; returns its line and leashd's peak rise in MiB.
  std::pair<std::string, int64_t> Unread(const std::vector<std::string>& args) {
    ResetPeak(leashd_->pid());
    const int64_t before = PeakKib(leashd_->pid());
    std::vector<std::string> argv = {RunfilePath("test/leashd/h2_unread_calls"),
                                     leashd_->tools_socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto run = leash::testing::Run(agents_["leash-it-a"]->AsUser(argv), absl::Seconds(120));
    EXPECT_TRUE(run.ok());
    const int64_t peak_mib = (PeakKib(leashd_->pid()) - before) / 1024;
    std::cout << absl::StrJoin(args, " ") << ": " << (run.ok() ? run->out : "")
              << "leashd's peak rose by " << peak_mib << " MiB\n";
    return {run.ok() ? run->out : "", peak_mib};
  }
  // The decision log says, under leash-it-a's uid, that its connections were cut.
  void ExpectCutLogged() {
    EXPECT_TRUE(WaitFor(
        [&] {
          return HasDecisionLine(ReadAll(files_->Join("decisions.jsonl")),
                                 "its connections to the tools socket are cut",
                                 agents_["leash-it-a"]->uid());
        },
        absl::Seconds(10)))
        << ReadAll(files_->Join("decisions.jsonl"));
  }
  // How many of leash-it-a's calls were judged (each is logged with the tool's name).
  int JudgedCalls() {
    const std::string uid_field = absl::StrCat("\"uid\":", agents_["leash-it-a"]->uid(), ",");
    int judged = 0;
    for (absl::string_view line :
         absl::StrSplit(ReadAll(files_->Join("decisions.jsonl")), '\n')) {
      judged += absl::StrContains(line, uid_field) && absl::StrContains(line, "read_file") ? 1 : 0;
    }
    return judged;
  }
  // Both agents are answered: the cut account's calls have all ended.
  void ExpectBothAnswered() {
    for (const char* agent : {"leash-it-b", "leash-it-a"}) {
      EXPECT_TRUE(WaitFor(
          [&] { return OneToolCall(*agents_[agent], leashd_->tools_socket())["codes"] == "0:1"; },
          absl::Seconds(20)))
          << agent;
    }
  }
  void SetUp() override {
    LeashdTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-a", "leash-it-b"}));
    ASSERT_NO_FATAL_FAILURE(StartLeashd());
    ASSERT_EQ(chmod(leashd_->tools_socket().c_str(), 0666), 0);
  }
};

// Calls opened without acknowledging the server's SETTINGS: 8 reach leashd's handlers (and are
// judged); the caller's connections are cut once the relay's buffer is full of the rest, said
// in the decision log under its uid.
TEST_F(UnreadingCallerTest, CallsKeptAliveGetTheConnectionCut) {
  auto [out, peak_mib] = Unread({"20000"});
  EXPECT_THAT(out, HasSubstr("cut_after=")) << "the connection was never cut";
  EXPECT_LE(peak_mib, 128);
  ExpectCutLogged();
  // The bound is a number: no more calls are judged than --tools-calls-per-account.
  const int judged = JudgedCalls();
  std::cout << "judged calls: " << judged << "\n";
  EXPECT_LE(judged, 8) << ReadAll(files_->Join("decisions.jsonl")).substr(0, 4000);
  ExpectBothAnswered();
}

// Calls held in flight (headers only) take the 8 calls the relay lets through before the
// caller acknowledges the server's SETTINGS; every further call is held in the relay's buffer,
// none reaches gRPC, and the connection is cut when the buffer is full.
TEST_F(UnreadingCallerTest, AnswersLeftUnreadGetTheConnectionCut) {
  auto [out, peak_mib] = Unread({"200000", "--hold=8"});
  EXPECT_THAT(out, HasSubstr("cut_after=")) << "the connection was never cut";
  EXPECT_LE(peak_mib, 128);
  ExpectCutLogged();
  ExpectBothAnswered();
}

// A caller that acknowledges the server's SETTINGS and then never reads: from the
// acknowledgement gRPC holds it to 8 calls per connection (a call over that cap ends the
// connection, gRPC's own doing, so no decision line), and the relay passes its bytes untouched.
TEST_F(UnreadingCallerTest, ACallerThatAcknowledgesTheSettingsAndStopsReadingGetsTheConnectionCut) {
  auto [out, peak_mib] = Unread({"20000", "--ack"});
  EXPECT_THAT(out, HasSubstr("cut_after=")) << "the connection was never cut";
  EXPECT_LE(peak_mib, 128);
  ExpectBothAnswered();
}

}  // namespace
}  // namespace leash::testing

namespace leash::testing {
namespace {

// An agent with subordinate UIDs (useradd gives every new account a range in /etc/subuid, and
// newuidmap lets it map them) makes a user namespace and, as an inner UID, runs under a host UID
// of that range. It is still the agent on every surface, and logged as the agent.
TEST_F(LeashdTest, AnAgentInsideItsOwnUserNamespaceIsConfinedOnEverySurfaceAndLoggedAsItself) {
  ASSERT_NO_FATAL_FAILURE(AddAgents({"leash-it-sub"}));
  ASSERT_NO_FATAL_FAILURE(StartLeashd());
  const TestAccount& agent = *agents_["leash-it-sub"];
  mkdir((fs_->path() + "/secret").c_str(), 0755);
  mkdir((fs_->path() + "/bin").c_str(), 0755);
  std::ofstream(fs_->path() + "/secret/x") << "x";
  chmod((fs_->path() + "/secret/x").c_str(), 0644);
  ASSERT_TRUE(leash::testing::RunOk({"cp", "/bin/true", fs_->path() + "/bin/forbidden"}).ok());

  // Status shows the ranges leashd read for it.
  leash::v1::SubjectStatus subject = Subjects()["leash-it-sub"];
  ASSERT_EQ(subject.state(), "enforced") << subject.detail();
  ASSERT_GT(subject.subordinate_uids_size(), 0) << "useradd gave " << agent.name() << " no range";
  const uint32_t inner_host_uid = subject.subordinate_uids(0).first();

  // The proof the commands below really run under the subordinate UID, not the agent's own.
  auto status = leash::testing::Run(agent.InOwnUserNamespace({"cat", "/proc/self/uid_map"}));
  ASSERT_TRUE(status.ok());
  ASSERT_THAT(status->out, HasSubstr(absl::StrCat(inner_host_uid))) << status->out;

  // Files and commands, from leashd's mount namespace (see InItsMounts): a file the policy
  // allows is read, so the denials are the policy's.
  std::ofstream(fs_->path() + "/open.txt") << "o";
  chmod((fs_->path() + "/open.txt").c_str(), 0644);
  ASSERT_TRUE(leash::testing::RunOk({"cp", "/bin/true", fs_->path() + "/bin/allowed"}).ok());
  auto allowed = leash::testing::Run(
      leashd_->InItsMounts(agent.InOwnUserNamespace({"cat", fs_->path() + "/open.txt"})));
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->exit_code, 0) << allowed->out;
  auto allowed_exec = leash::testing::Run(
      leashd_->InItsMounts(agent.InOwnUserNamespace({fs_->path() + "/bin/allowed"})));
  ASSERT_TRUE(allowed_exec.ok());
  EXPECT_EQ(allowed_exec->exit_code, 0) << allowed_exec->out;
  auto read = leash::testing::Run(
      leashd_->InItsMounts(agent.InOwnUserNamespace({"cat", fs_->path() + "/secret/x"})));
  ASSERT_TRUE(read.ok());
  EXPECT_NE(read->exit_code, 0);
  EXPECT_THAT(read->out, HasSubstr("Operation not permitted"));
  auto exec = leash::testing::Run(
      leashd_->InItsMounts(agent.InOwnUserNamespace({fs_->path() + "/bin/forbidden"})));
  ASSERT_TRUE(exec.ok());
  EXPECT_NE(exec->exit_code, 0);
  EXPECT_THAT(exec->out, HasSubstr("Operation not permitted"));

  // The network (in leashd's network namespace, where a veth pair makes 192.0.2.0/24 routable):
  // redirected to the agent's own listener and judged by its whitelist, which does not list
  // the name.
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"ip", "link", "add", "lsub0", "type", "veth", "peer", "name", "lsub1"},
        std::vector<std::string>{"ip", "addr", "add", "192.0.2.254/24", "dev", "lsub0"},
        std::vector<std::string>{"ip", "link", "set", "lsub1", "up"},
        std::vector<std::string>{"ip", "link", "set", "lsub0", "up"}}) {
    auto done = ns_->Run(step);
    ASSERT_TRUE(done.ok() && done->exit_code == 0) << absl::StrJoin(step, " ");
  }
  auto fetch = ns_->Run(agent.InOwnUserNamespace(
                            {"bash", "-c",
                             "exec 3<>/dev/tcp/192.0.2.1/80 && printf 'GET / HTTP/1.0\\r\\nHost: "
                             "blocked-sub.example\\r\\n\\r\\n' >&3 && cat <&3"}),
                        absl::Seconds(20));
  ASSERT_TRUE(fetch.ok());
  EXPECT_THAT(fetch->out, Not(HasSubstr("HTTP/")));

  // Tools: a CheckTool call from inside the namespace (no account named) is the agent's own,
  // judged by its policy (the floor allows read_file), not refused as a stranger's.
  ASSERT_EQ(chmod(leashd_->tools_socket().c_str(), 0666), 0);
  // A copy the inner UID can reach (the runfiles tree may sit under a folder only its owner
  // may enter).
  const std::string flood = files_->Join("tools_flood");
  ASSERT_TRUE(leash::testing::RunOk({"cp", RunfilePath("test/leashd/tools_flood"), flood}).ok());
  auto tool = leash::testing::Run(
      agent.InOwnUserNamespace({flood, leashd_->tools_socket(), "--seconds=0"}),
      absl::Seconds(60));
  ASSERT_TRUE(tool.ok());
  EXPECT_EQ(FloodSummary(tool->out)["codes"], "0:1") << tool->out;

  // Every decision is logged under the agent's own UID.
  const std::string log_path = files_->Join("decisions.jsonl");
  const uint32_t uid = agent.uid();
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string log = ReadAll(log_path);
        return HasDecisionLine(log, "/secret/x", uid) && HasDecisionLine(log, "/bin/forbidden", uid) &&
               HasDecisionLine(log, "blocked-sub.example", uid) &&
               HasDecisionLine(log, "\"surface\":\"tools\"", uid);
      },
      absl::Seconds(10)))
      << ReadAll(log_path);
  EXPECT_FALSE(absl::StrContains(ReadAll(log_path), absl::StrCat("\"uid\":", inner_host_uid, ",")));

  // `leash status` shows the ranges; `leash validate` names the command that removes them.
  RunResult shown = Cli({"status"});
  EXPECT_THAT(shown.out, HasSubstr(absl::StrCat("subordinate uids ", inner_host_uid, "-")));
  RunResult validate = Cli({"validate"});
  EXPECT_THAT(validate.out, HasSubstr(absl::StrCat("usermod --del-subuids ", inner_host_uid, "-")));
  EXPECT_THAT(validate.out, HasSubstr("leash-it-sub"));

  // A range added with no signal sent is part of the subject by itself (leashd watches /etc).
  const uint32_t passes = Status().reconcile_passes();
  ASSERT_TRUE(leash::testing::RunOk({"usermod", "--add-subuids", "4000000000-4000000009",
                                     agent.name()})
                  .ok());
  ASSERT_TRUE(leashd_->PublishAccounts().ok());  // the host's change, in leashd's view
  EXPECT_TRUE(WaitFor(
      [&] {
        const leash::v1::SubjectStatus now = Subjects()["leash-it-sub"];
        for (const leash::v1::IdRange& range : now.subordinate_uids()) {
          if (range.first() == 4000000000u && range.last() == 4000000009u) return true;
        }
        return false;
      },
      absl::Seconds(10)))
      << leashd_->Log();
  EXPECT_GT(Status().reconcile_passes(), passes);
}

}  // namespace
}  // namespace leash::testing
