// Consent for every write against a real leashd (docs/ARCHITECTURE.md, rule P12): a rebind and
// a profile re-save that drop a deny the agent had are refused like the unbind of it, naming
// the token and the re-run line; the re-run line, run as printed, is written, its consent
// appended to the ledger (who, what, the tokens) before the change, and only then is the deny
// gone; a ledger that cannot be written refuses the write and the deny stays.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "re2/re2.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/agent_fixture.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ConsentE2eTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeViewedHost("lcon-user", {"leash-vader"}, "lcon"));
    ASSERT_NO_FATAL_FAILURE(StartLeashd(absl::StrCat(
        "user: lcon-user\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"] }\n",
        "commands: { mode: blacklist, deny: [\"ssh\"] }\n",
        "filesystem: { mode: whitelist, allow: [\"/\"] }\n",
        "logging: { level: info, decisions: ", decisions(), " }\n")));
    ASSERT_EQ(Save("no-py", "commands: { deny: [python3] }\n").exit_code, 0);
    ASSERT_EQ(Save("no-paste", "commands: { deny: [xclip] }\n").exit_code, 0);
    RunResult bound = Leash({"bind", "agent:leash-vader", "no-py"});
    ASSERT_EQ(bound.exit_code, 0) << bound.out;
    ASSERT_FALSE(PythonAllowed()) << "the binding denies python3";
  }

  RunResult Save(const std::string& name, const std::string& yaml,
                 const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"profile", "save", name, "--from", WriteProfile(name, yaml)};
    args.insert(args.end(), extra.begin(), extra.end());
    return Leash(args);
  }

  bool PythonAllowed() {
    RunResult check = Leash({"check", "commands", "python3", "--account", "leash-vader"});
    EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 1) << check.out;
    return check.exit_code == 0;
  }

  std::string Ledger() const { return ReadAll(leashd_->state_dir() + "/unbinds.jsonl"); }

  // The refusal's re-run line without its "sudo leash " (LeashAsPrinted adds the leash).
  static std::string Rerun(const RunResult& refused) {
    std::string line;
    EXPECT_TRUE(RE2::PartialMatch(refused.out, R"(\n  sudo leash ([^\n]+)\n)", &line))
        << refused.out;
    return line;
  }
};

TEST_F(ConsentE2eTest, ARebindDroppingADenyIsRefusedUntilAckedAndRecordedBeforeItIsWritten) {
  RunResult refused = Leash({"bind", "agent:leash-vader", "no-paste"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (loosening)"));
  EXPECT_THAT(refused.out, HasSubstr("replaces agent:leash-vader's binding to 'no-py'"));
  EXPECT_THAT(refused.out, HasSubstr("--ack 'unset.deny:commands:python3'"));
  EXPECT_THAT(refused.out, Not(HasSubstr("written")));
  EXPECT_FALSE(PythonAllowed()) << "a refused rebind changes nothing";
  EXPECT_EQ(Ledger(), "");

  const std::string rerun = Rerun(refused);
  EXPECT_EQ(rerun, "bind agent:leash-vader no-paste --ack 'unset.deny:commands:python3'");
  setenv("SUDO_USER", "alice-operator", 1);
  setenv("SUDO_UID", "1234", 1);
  LeashAsPrinted(rerun);
  unsetenv("SUDO_USER");
  unsetenv("SUDO_UID");
  const std::string ledger = Ledger();
  EXPECT_THAT(ledger, HasSubstr("\"kind\":\"bind\""));
  EXPECT_THAT(ledger, HasSubstr("\"scope\":\"agent:leash-vader\",\"profile\":\"no-paste\","
                                "\"acks\":[\"unset.deny:commands:python3\"]"));
  EXPECT_THAT(ledger, HasSubstr("uid 0 (root), pid "));
  EXPECT_THAT(ledger, HasSubstr("claimed by the client: sudo from alice-operator (SUDO_UID 1234)"));
  EXPECT_TRUE(PythonAllowed()) << "the consented rebind is in force";
}

TEST_F(ConsentE2eTest, AProfileResaveDroppingADenyIsRefusedUntilAckedAndRecorded) {
  RunResult refused = Save("no-py", "commands: { deny: [] }\n");
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("--ack 'agent:leash-vader=unset.deny:commands:python3'"));
  EXPECT_FALSE(PythonAllowed()) << "a refused save changes nothing";
  EXPECT_EQ(Ledger(), "");

  LeashAsPrinted(Rerun(refused));
  EXPECT_THAT(Ledger(), HasSubstr("\"kind\":\"profile-save\""));
  EXPECT_THAT(Ledger(), HasSubstr("\"acks\":[\"agent:leash-vader=unset.deny:commands:python3\"]"));
  EXPECT_TRUE(PythonAllowed()) << "the consented save is in force";
}

TEST_F(ConsentE2eTest, AWriteWhoseLedgerRecordCannotBeWrittenDoesNotHappen) {
  // The ledger cannot be opened for appending: its path is a folder.
  ASSERT_EQ(mkdir((leashd_->state_dir() + "/unbinds.jsonl").c_str(), 0700), 0);
  RunResult rebind =
      Leash({"bind", "agent:leash-vader", "no-paste", "--ack", "unset.deny:commands:python3"});
  EXPECT_EQ(rebind.exit_code, 1) << rebind.out;
  EXPECT_THAT(rebind.out, HasSubstr("refused (ledger)"));
  EXPECT_THAT(rebind.out, HasSubstr("agent:leash-vader is still bound to 'no-py'"));
  RunResult save = Save("no-py", "commands: { deny: [] }\n",
                        {"--ack", "agent:leash-vader=unset.deny:commands:python3"});
  EXPECT_EQ(save.exit_code, 1) << save.out;
  EXPECT_THAT(save.out, HasSubstr("refused (ledger)"));
  EXPECT_FALSE(PythonAllowed()) << "neither write happened";
  RunResult bindings = Leash({"bindings"});
  EXPECT_THAT(bindings.out, HasSubstr("no-py"));
}

// A floor edit widens every subject: `leash net allow` on a whitelist floor is judged as the
// floor before and after, refused until acked; the consent is on the ledger (kind floor-edit)
// before the floor is written, and an edit whose record cannot be written does not happen.
TEST_F(ConsentE2eTest, AFloorEditThatWidensEverySubjectIsRefusedUntilAckedAndRecordedFirst) {
  auto reached = [&] {
    RunResult check = Leash({"check", "network", "gist.example:443", "--account", "leash-vader"});
    EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 1) << check.out;
    return check.exit_code == 0;
  };
  ASSERT_FALSE(reached()) << "the floor's whitelist does not allow it";
  RunResult refused = Leash({"net", "allow", "gist.example"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (loosening)"));
  EXPECT_THAT(refused.out, HasSubstr("loosens the floor for every subject on the host"));
  const std::string rerun = Rerun(refused);
  EXPECT_EQ(rerun, "network allow gist.example --ack 'network.allow:gist.example'");
  EXPECT_FALSE(reached()) << "a refused floor edit changes nothing";
  EXPECT_EQ(Ledger(), "");

  const std::string ledger_path = leashd_->state_dir() + "/unbinds.jsonl";
  ASSERT_EQ(mkdir(ledger_path.c_str(), 0700), 0);
  RunResult unrecorded = Leash({"net", "allow", "gist.example", "--ack",
                                "network.allow:gist.example"});
  EXPECT_EQ(unrecorded.exit_code, 1) << unrecorded.out;
  EXPECT_THAT(unrecorded.out, HasSubstr("refused (ledger)"));
  EXPECT_FALSE(reached()) << "a floor edit whose consent was not recorded did not happen";
  ASSERT_EQ(rmdir(ledger_path.c_str()), 0);

  LeashAsPrinted(rerun);
  EXPECT_THAT(Ledger(), HasSubstr("\"kind\":\"floor-edit\""));
  EXPECT_THAT(Ledger(), HasSubstr("\"scope\":\"floor\""));
  EXPECT_THAT(Ledger(), HasSubstr("\"acks\":[\"network.allow:gist.example\"]"));
  EXPECT_TRUE(reached()) << "the consented floor edit is in force";
}

// A profile delete that strands a binding (its agent then denied everything) is refused until
// each binding is acknowledged, and that consent is on the ledger before the profile goes.
TEST_F(ConsentE2eTest, AProfileDeleteRecordsItsConsentBeforeTheProfileGoes) {
  RunResult refused = Leash({"profile", "delete", "no-py"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (dangling)"));
  const std::string rerun = Rerun(refused);
  EXPECT_EQ(rerun, "profile delete no-py --ack 'dangling:agent:leash-vader'");
  EXPECT_EQ(Ledger(), "");
  LeashAsPrinted(rerun);
  EXPECT_THAT(Ledger(), HasSubstr("\"kind\":\"profile-delete\""));
  EXPECT_THAT(Ledger(), HasSubstr("\"acks\":[\"dangling:agent:leash-vader\"]"));
  EXPECT_FALSE(PythonAllowed()) << "the stranded binding holds its agent fail-closed";
}

TEST_F(ConsentE2eTest, ARebindThatOnlyTightensIsWrittenWithoutConsent) {
  ASSERT_EQ(Save("strict", "commands: { deny: [python3, xclip] }\n").exit_code, 0);
  RunResult rebind = Leash({"bind", "agent:leash-vader", "strict"});
  EXPECT_EQ(rebind.exit_code, 0) << rebind.out;
  EXPECT_THAT(rebind.out, HasSubstr("replaces agent:leash-vader's binding to 'no-py'"));
  EXPECT_EQ(Ledger(), "");
  EXPECT_FALSE(PythonAllowed());
}

// The re-run line always runs (rule P13): a profile switching the filesystem to blacklist over
// the floor's allow list is a loosening, and with its consent still a validate error (the
// allow list is never consulted). The refusal lists both and prints no line that would fail.
TEST_F(ConsentE2eTest, ARefusalWhoseReRunWouldFailValidateListsItAndPrintsNoLine) {
  ASSERT_EQ(Save("open-fs", "filesystem: { mode: blacklist }\n").exit_code, 0);
  RunResult refused = Leash({"bind", "agent:leash-vader", "open-fs"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (loosening)"));
  EXPECT_THAT(refused.out, HasSubstr("--ack 'filesystem.mode:blacklist'"));
  EXPECT_THAT(refused.out, HasSubstr("With that consent it would still be refused"));
  EXPECT_THAT(refused.out, HasSubstr("never consulted"));
  EXPECT_THAT(refused.out, Not(HasSubstr("re-run with consent:")));
  // What the refusal says holds: with every token it names, validate refuses it.
  RunResult acked = Leash({"bind", "agent:leash-vader", "open-fs", "--ack",
                           "filesystem.mode:blacklist", "--ack", "unset.deny:commands:python3"});
  EXPECT_EQ(acked.exit_code, 1) << acked.out;
  EXPECT_THAT(acked.out, HasSubstr("refused (validate)"));
}

}  // namespace
}  // namespace leash::testing
