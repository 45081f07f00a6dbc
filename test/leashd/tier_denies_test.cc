// Deny lists across the tiers, end to end: the real leashd and its watcher, real agent accounts
// running real binaries and opening real files on the watched tmpfs, driven with `leash profile
// save`, `leash bind`, `leash unbind` and `leash fs deny` as an operator would.
//
// A profile may tighten the floor freely, and an extra deny is the usual tightening; an unbind is
// judged with and without the binding, and a deny it drops is the loosening unset.deny
// (docs/ARCHITECTURE.md, rules P6 and P7). So a subject's deny list is the floor's, the global
// binding's and its own profile's together, and a floor deny holds for every subject.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class TierDeniesTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_NE(MountTmpfs(), nullptr);
    // Host names unique to this run; leashd sees the agents under the names the test uses,
    // and no other run's agent accounts.
    ASSERT_NE(MakeAccountView(), nullptr);
    ASSERT_NE(AddAccount(UniqueAccountName("ltd-user")), nullptr);
    ASSERT_NE(AddAccount(UniqueAccountName(kAgentA), kAgentA), nullptr);
    ASSERT_NE(AddAccount(UniqueAccountName(kAgentB), kAgentB), nullptr);
    ASSERT_NE(MakeFiles("ltd"), nullptr);

    for (const char* dir : {"/secret", "/new-secret", "/other-secret", "/bin"}) {
      ASSERT_EQ(mkdir(Path(dir).c_str(), 0755), 0) << dir;
    }
    for (const char* file : {"/secret/x", "/new-secret/x", "/other-secret/x", "/open.txt"}) {
      std::ofstream(Path(file)) << "x";
      chmod(Path(file).c_str(), 0644);
    }
    for (const char* binary : {"/bin/forbidden", "/bin/okay", "/bin/other"}) {
      ASSERT_TRUE(RunOk({"cp", "/bin/true", Path(binary)}).ok()) << binary;
      chmod(Path(binary).c_str(), 0755);
    }

    const std::string floor = absl::StrCat(
        "user: ", user().name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", Path("/secret"), "\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [\"", Path("/bin/forbidden"), "\"] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
        "logging: { level: info, decisions: ", files_->Join("decisions.jsonl"), " }\n");
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path(), {}, view_.get());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  std::string Path(const std::string& relative) const { return fs_->path() + relative; }
  const TestAccount& user() const { return *accounts_[0]; }
  const TestAccount& agent_a() const { return *accounts_[1]; }
  const TestAccount& agent_b() const { return *accounts_[2]; }
  // The names leashd knows the agents by.
  inline static const std::string kAgentA = "leash-tda";
  inline static const std::string kAgentB = "leash-tdb";

  RunResult Leash(const std::vector<std::string>& args) {
    auto result = leashd_->Cli(args);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : RunResult();
  }

  // Saves profile `name` as `<surface>: { deny: [...] }`, each entry a path on the tmpfs, and
  // returns the CLI's exit code.
  int SaveDenyProfile(const std::string& name, const std::string& surface,
                      const std::vector<std::string>& relatives) {
    std::vector<std::string> quoted;
    for (const std::string& relative : relatives) quoted.push_back("\"" + Path(relative) + "\"");
    const std::string path = files_->Join(name + ".yaml");
    std::ofstream(path) << surface << ": { deny: [" << absl::StrJoin(quoted, ", ") << "] }\n";
    RunResult saved = Leash({"profile", "save", name, "--from", path});
    EXPECT_EQ(saved.exit_code, 0) << saved.out;
    return saved.exit_code;
  }

  // `account` runs the binary at `relative` on the watched tmpfs: true when the exec happened
  // (the copy of /bin/true exits 0), false when it was refused with EPERM.
  bool Runs(const TestAccount& account, const std::string& relative) {
    auto run = leash::testing::Run(leashd_->InItsMounts(account.AsUser({Path(relative)})));
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return false;
    if (run->exit_code != 0) {
      EXPECT_THAT(run->out, HasSubstr("Operation not permitted")) << relative;
    }
    return run->exit_code == 0;
  }

  // `account` reads the file at `relative`: true when it could, false on EPERM.
  bool Reads(const TestAccount& account, const std::string& relative) {
    auto read =
        leash::testing::Run(leashd_->InItsMounts(account.AsUser({"cat", Path(relative)})));
    EXPECT_TRUE(read.ok()) << read.status();
    if (!read.ok()) return false;
    if (read->exit_code != 0) {
      EXPECT_THAT(read->out, HasSubstr("Operation not permitted")) << relative;
    }
    return read->exit_code == 0;
  }

  std::map<std::string, std::string> States() {
    std::map<std::string, std::string> out;
    auto status = leashd_->Status();
    EXPECT_TRUE(status.ok()) << status.status();
    if (!status.ok()) return out;
    for (const auto& subject : status->subjects()) {
      out[subject.account()] = subject.state() + " " + subject.detail();
    }
    return out;
  }

  std::unique_ptr<LeashdInstance> leashd_;
};

// The case: a profile that only adds `commands.deny: [okay]` was refused as loosening
// the floor's `forbidden` deny, and once acked the agent could run `forbidden`.
TEST_F(TierDeniesTest, AProfileMayTightenTheFloorFreelyAndTheFloorsDenyStillHolds) {
  ASSERT_EQ(SaveDenyProfile("extra", "commands", {"/bin/okay"}), 0);
  RunResult bound = Leash({"bind", "agent:" + kAgentA, "extra"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;
  EXPECT_THAT(bound.out, Not(HasSubstr("unset.deny")));
  EXPECT_THAT(States()[kAgentA], ::testing::StartsWith("enforced"))
      << leashd_->Log();

  // The bound agent: the floor's deny and its own.
  EXPECT_FALSE(Runs(agent_a(), "/bin/forbidden")) << "the floor's deny was dropped";
  EXPECT_FALSE(Runs(agent_a(), "/bin/okay"));
  EXPECT_TRUE(Runs(agent_a(), "/bin/other"));
  EXPECT_FALSE(Reads(agent_a(), "/secret/x"));
  // The other agent: the floor only.
  EXPECT_FALSE(Runs(agent_b(), "/bin/forbidden"));
  EXPECT_TRUE(Runs(agent_b(), "/bin/okay"));
  RunResult check =
      Leash({"check", "cmd", Path("/bin/forbidden"), "--account", kAgentA});
  EXPECT_EQ(check.exit_code, 1) << check.out;
}

// "leash bind global says out loud that it changes the floor for every subject on the host":
// a deny-only global profile needs no ack and keeps the floor's denies for every subject.
TEST_F(TierDeniesTest, BindGlobalWithADenyOnlyProfileNeedsNoAckAndKeepsTheFloorsDenies) {
  ASSERT_EQ(SaveDenyProfile("extra", "commands", {"/bin/okay"}), 0);
  RunResult bound = Leash({"bind", "global", "extra"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;
  EXPECT_THAT(bound.out, HasSubstr("bind global changes the floor for every subject"));
  EXPECT_THAT(bound.out, Not(HasSubstr("unset.deny")));
  for (const TestAccount* subject : {&user(), &agent_a(), &agent_b()}) {
    EXPECT_FALSE(Runs(*subject, "/bin/forbidden")) << subject->name();
    EXPECT_FALSE(Runs(*subject, "/bin/okay")) << subject->name();
    EXPECT_TRUE(Runs(*subject, "/bin/other")) << subject->name();
  }
}

// Tightening the floor used to put every agent whose profile set that deny list into "denied
// everything" (its profile "dropped" the new floor deny without consent); so did an inert deny
// in a profile. Neither may: the agent stays enforced, with every deny in force.
TEST_F(TierDeniesTest, TighteningTheFloorNeverDeniesEverythingToAnAgentWhoseProfileSetsThatList) {
  // The profile repeats the floor's deny, so it bound without consent under either rule; what
  // the floor gains afterwards is what it used to "drop".
  ASSERT_EQ(SaveDenyProfile("fsp", "filesystem", {"/secret", "/other-secret"}), 0);
  ASSERT_EQ(Leash({"bind", "agent:" + kAgentA, "fsp"}).exit_code, 0);
  RunResult tightened = Leash({"fs", "deny", Path("/new-secret")});
  ASSERT_EQ(tightened.exit_code, 0) << tightened.out;

  std::map<std::string, std::string> states = States();
  EXPECT_THAT(states[kAgentA], ::testing::StartsWith("enforced")) << leashd_->Log();
  EXPECT_THAT(states[kAgentB], ::testing::StartsWith("enforced"));
  EXPECT_FALSE(Reads(agent_a(), "/new-secret/x")) << "the new floor deny is not in force";
  EXPECT_FALSE(Reads(agent_a(), "/other-secret/x"));
  EXPECT_FALSE(Reads(agent_a(), "/secret/x"));
  EXPECT_TRUE(Reads(agent_a(), "/open.txt")) << "the agent is denied everything";
  EXPECT_TRUE(Runs(agent_a(), "/bin/other"));
  EXPECT_FALSE(Reads(agent_b(), "/new-secret/x"));

  // An inert deny (a relative command path never matches), as an operator may leave in a
  // profile file by hand: accepted on load and reported, and it drops no floor deny.
  ASSERT_EQ(SaveDenyProfile("inert", "commands", {"/bin/okay"}), 0);
  ASSERT_EQ(Leash({"bind", "agent:" + kAgentB, "inert"}).exit_code, 0);
  std::ofstream(leashd_->state_dir() + "/profiles/inert.yaml")
      << "commands: { deny: [\"bin/okay\"] }\n";
  RunResult reconciled = Leash({"reconcile"});
  EXPECT_EQ(reconciled.exit_code, 0) << reconciled.out;
  EXPECT_THAT(States()[kAgentB], ::testing::StartsWith("enforced")) << leashd_->Log();
  EXPECT_FALSE(Runs(agent_b(), "/bin/forbidden"));
  EXPECT_TRUE(Runs(agent_b(), "/bin/okay"));
  EXPECT_TRUE(Reads(agent_b(), "/open.txt"));
  RunResult validate = Leash({"validate"});
  EXPECT_EQ(validate.exit_code, 1) << validate.out;  // an inert deny is critical
  EXPECT_THAT(validate.out, HasSubstr("bin/okay"));
}

// "a deny the removal drops is judged as the engine's own unset.deny".
TEST_F(TierDeniesTest, UnbindingAProfileThatAddedADenyIsJudgedAsUnsetDeny) {
  ASSERT_EQ(SaveDenyProfile("extra", "commands", {"/bin/okay", "/bin/forbidden"}), 0);
  ASSERT_EQ(Leash({"bind", "agent:" + kAgentA, "extra"}).exit_code, 0);
  const std::string token = absl::StrCat("unset.deny:commands:", Path("/bin/okay"));

  RunResult refused = Leash({"unbind", "agent:" + kAgentA});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (loosening)"));
  EXPECT_THAT(refused.out, HasSubstr(absl::StrCat("--ack '", token, "'")));
  // The floor still denies `forbidden` without the binding: nothing to consent to for it.
  EXPECT_THAT(refused.out, Not(HasSubstr("unset.deny:commands:" + Path("/bin/forbidden"))));
  EXPECT_FALSE(Runs(agent_a(), "/bin/okay"));

  RunResult removed = Leash({"unbind", "agent:" + kAgentA, "--ack", token});
  ASSERT_EQ(removed.exit_code, 0) << removed.out;
  EXPECT_THAT(ReadAll(leashd_->state_dir() + "/unbinds.jsonl"), HasSubstr(token));
  EXPECT_TRUE(Runs(agent_a(), "/bin/okay"));
  EXPECT_FALSE(Runs(agent_a(), "/bin/forbidden"));
}

// `leash validate` explains the rule when a profile lists a deny the floor already has.
TEST_F(TierDeniesTest, ValidateSaysAProfileDenyTheFloorHasChangesNothing) {
  ASSERT_EQ(SaveDenyProfile("repeat", "commands", {"/bin/forbidden"}), 0);
  RunResult validate = Leash({"validate"});
  EXPECT_EQ(validate.exit_code, 0) << validate.out;
  EXPECT_THAT(validate.out, HasSubstr(absl::StrCat("'", Path("/bin/forbidden"),
                                                   "' is already in the floor's commands.deny")));
  EXPECT_THAT(validate.out, HasSubstr("a floor deny holds for every subject"));
}

}  // namespace
}  // namespace leash::testing
