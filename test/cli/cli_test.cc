// The leash CLI against a real leashd. Every refusal docs/ARCHITECTURE.md's rules describe is
// compared with a golden file in testdata/ (run with LEASH_UPDATE_GOLDEN=1 to rewrite them after a
// deliberate change, then review the diff); the temp paths of the run are replaced by
// placeholders first.
#include <linux/limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "re2/re2.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/agent_fixture.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CliTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    if (!Ready()) return;
    // Host accounts unique to this run, shown to leashd under the names the floor and the
    // golden output use; no other run's agents are in its view.
    ASSERT_NO_FATAL_FAILURE(MakeViewedHost("lcli-user", {"leash-iris", "leash-vader"}, "lcli"));
    const std::string floor = absl::StrCat(
        "user: lcli-user\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [\"bad.example\"] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", fs_->path(), "/secret\"] }\n",
        "commands: { mode: whitelist, allow: [\"git\"], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
        "logging: { level: info, decisions: ", decisions(), " }\n");
    ASSERT_NO_FATAL_FAILURE(StartLeashd(floor));
  }

  // Compares `actual` with testdata/<name>.golden after replacing this run's paths.
  void ExpectGolden(const std::string& name, std::string actual) {
    const std::string instance =
        leashd_->state_dir().substr(0, leashd_->state_dir().rfind('/'));
    actual = absl::StrReplaceAll(actual, {{files_->path(), "<FILES>"},
                                          {leashd_->config_path(), "<CONFIG>"},
                                          {instance, "<LEASHD>"},
                                          {fs_->path(), "<FS>"}});
    // UIDs differ from host to host.
    RE2::GlobalReplace(&actual, R"(\(uid [0-9]+\))", "(uid <UID>)");
    // So do timings.
    RE2::GlobalReplace(&actual, R"(\([0-9.]+ ms\))", "(<MS> ms)");
    const std::string golden_path = absl::StrCat("test/cli/testdata/", name, ".golden");
    if (const char* update = std::getenv("LEASH_UPDATE_GOLDEN"); update && *update == '1') {
      const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
      std::ofstream(absl::StrCat(workspace ? workspace : ".", "/", golden_path)) << actual;
      return;
    }
    EXPECT_EQ(actual, ReadAll(golden_path)) << "golden " << golden_path << " differs";
  }
};

TEST_F(CliTest, RefusalListsEveryLooseningWithItsAckTokenAndTheRerunLine) {
  const std::string from = WriteProfile(
      "web", "fail_mode: open\nnetwork: { allow: [\"openai.com\"], deny: [] }\n");
  ASSERT_EQ(Leash({"profile", "save", "web", "--from", from}).exit_code, 0);
  RunResult refused = Leash({"bind", "agent:leash-iris", "web"});
  EXPECT_EQ(refused.exit_code, 1);
  ExpectGolden("bind_loosening", refused.out);
  // The rerun line works as printed. The profile's `deny: []` drops none of the floor's denies,
  // so it asks for no unset.deny, and bad.example stays denied for the agent.
  RunResult consented = Leash({"bind", "agent:leash-iris", "web", "--ack", "fail_mode:open", "--ack",
                               "network.allow:openai.com"});
  EXPECT_EQ(consented.exit_code, 0) << consented.out;
  RunResult denied = Leash({"check", "net", "bad.example:443", "--account", "leash-iris"});
  EXPECT_EQ(denied.exit_code, 1) << denied.out;
  EXPECT_THAT(denied.out, HasSubstr("matches deny entry 'bad.example'"));
}

TEST_F(CliTest, DisplayNameScopeIsRefusedNamingTheAccount) {
  WriteProfile("p", "network: { deny: [\"x.example\"] }\n");
  ASSERT_EQ(Leash({"profile", "save", "p", "--from", files_->Join("p.yaml")}).exit_code, 0);
  RunResult refused = Leash({"bind", "agent:Iris", "p"});
  EXPECT_EQ(refused.exit_code, 1);
  ExpectGolden("scope_display_name", refused.out);
}

TEST_F(CliTest, TeamScopeIsRefusedWithTheReason) {
  WriteProfile("p", "network: { deny: [\"x.example\"] }\n");
  ASSERT_EQ(Leash({"profile", "save", "p", "--from", files_->Join("p.yaml")}).exit_code, 0);
  RunResult refused = Leash({"bind", "team:red", "p"});
  EXPECT_EQ(refused.exit_code, 1);
  ExpectGolden("scope_team", refused.out);
}

TEST_F(CliTest, GlobalBindSaysItChangesTheFloorForEverySubject) {
  WriteProfile("base", "network: { deny: [\"bad.example\", \"worse.example\"] }\n");
  ASSERT_EQ(Leash({"profile", "save", "base", "--from", files_->Join("base.yaml")}).exit_code, 0);
  RunResult bound = Leash({"bind", "global", "base"});
  EXPECT_EQ(bound.exit_code, 0) << bound.out;
  ExpectGolden("bind_global", bound.out);
}

TEST_F(CliTest, InertEntryIsRefusedOnWriteAsKindEntryWithInertEntriesInJson) {
  RunResult text = Leash({"net", "allow", "https://github.com/org"});
  EXPECT_EQ(text.exit_code, 1);
  ExpectGolden("allow_inert_entry", text.out);
  RunResult json = Leash({"--json", "net", "allow", "https://github.com/org"});
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_THAT(json.out, HasSubstr("\"kind\":\"entry\""));
  EXPECT_THAT(json.out, HasSubstr("\"inert_entries\":[{\"field\":\"network.allow\""));
  const std::string from = WriteProfile("bad", "filesystem: { deny: [\"~/.ssh\"] }\n");
  RunResult profile = Leash({"--json", "profile", "save", "bad", "--from", from});
  EXPECT_EQ(profile.exit_code, 1);
  EXPECT_THAT(profile.out, HasSubstr("\"kind\":\"entry\""));
  EXPECT_THAT(profile.out, HasSubstr("\"entry\":\"~/.ssh\""));
}

TEST_F(CliTest, AWriteWhoseReconcileFailsSaysItIsNotInForceAndHowToRunIt) {
  // ports.json corrupt: the write lands, the reconcile after it fails wholesale.
  std::ofstream(leashd_->state_dir() + "/ports.json") << "{\"format\":1,";
  RunResult written = Leash({"net", "deny", "evil.example"});
  EXPECT_EQ(written.exit_code, 1) << written.out;
  ExpectGolden("write_not_in_force", written.out);
  EXPECT_THAT(ReadAll(leashd_->config_path()), HasSubstr("evil.example"));
}

TEST_F(CliTest, NoReconcileLeavesTheServiceUnchanged) {
  RunResult written = Leash(
      {"net", "allow", "new.example", "--no-reconcile", "--ack", "network.allow:new.example"});
  EXPECT_EQ(written.exit_code, 0) << written.out;
  EXPECT_THAT(written.out, HasSubstr("not reconciled (--no-reconcile)"));
  EXPECT_THAT(ReadAll(leashd_->config_path()), HasSubstr("new.example"));
  EXPECT_EQ(Leash({"check", "net", "new.example:443"}).exit_code, 1)
      << "the service changed without a reconcile";
  ASSERT_EQ(Leash({"reconcile"}).exit_code, 0);
  EXPECT_EQ(Leash({"check", "net", "new.example:443"}).exit_code, 0);
}

TEST_F(CliTest, EachFloorEditIsOnDiskAndInForceWithTheModeRestated) {
  EXPECT_EQ(Leash({"fs", "mode", "whitelist"}).exit_code, 0);
  // An allow on a whitelist widens every subject: each takes its consent.
  EXPECT_EQ(Leash({"fs", "allow", fs_->path() + "/work", "--ack",
                   "filesystem.allow:" + fs_->path() + "/work"})
                .exit_code,
            0);
  EXPECT_EQ(Leash({"cmd", "deny", "ssh"}).exit_code, 0);
  EXPECT_EQ(Leash({"tool", "allow", "search", "--ack", "tools.allow:search"}).exit_code, 0);
  struct stat st;
  ASSERT_EQ(stat(leashd_->config_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, user_->gid());
  RunResult status = Leash({"status"});
  EXPECT_THAT(status.out, HasSubstr("filesystem  whitelist       1      1"));
  EXPECT_EQ(Leash({"check", "fs", fs_->path() + "/work/a.txt"}).exit_code, 0);
  EXPECT_EQ(Leash({"check", "fs", fs_->path() + "/other.txt"}).exit_code, 1);
  EXPECT_EQ(Leash({"check", "tool", "search"}).exit_code, 0);
}

TEST_F(CliTest, ExitCodesAreAsDocumented) {
  EXPECT_EQ(Leash({"check", "net", "floor.example:443"}).exit_code, 0);
  EXPECT_EQ(Leash({"check", "net", "other.example:443"}).exit_code, 1);
  EXPECT_EQ(Leash({"check", "net", "no-port"}).exit_code, 2);
  EXPECT_EQ(Leash({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(Leash({"--bogus-flag", "status"}).exit_code, 2);
  RunResult away = leash::testing::Run({RunfilePath("cli/leash"), "--socket=/tmp/no-leashd.sock",
                                        "--config=" + leashd_->config_path(), "reconcile"})
                       .value();
  EXPECT_EQ(away.exit_code, 3) << away.out;
  EXPECT_THAT(away.out, HasSubstr("leashd is not answering on /tmp/no-leashd.sock"));
  // The stream needs leashd; the log file does not, and logs says where it is.
  RunResult logs_away =
      leash::testing::Run({RunfilePath("cli/leash"), "--socket=/tmp/no-leashd.sock",
                           "--config=" + leashd_->config_path(), "logs"})
          .value();
  EXPECT_EQ(logs_away.exit_code, 3) << logs_away.out;
  EXPECT_THAT(logs_away.out, HasSubstr("leashd is not answering on /tmp/no-leashd.sock"));
  EXPECT_THAT(logs_away.out,
              HasSubstr(absl::StrCat("the decisions are still in the log file, ",
                                     files_->Join("decisions.jsonl"))))
      << "the floor's logging.decisions";
}

// leashd's API carries UTF-8 text only, and a file name is any bytes: such a subject is
// refused by the CLI with the name shown, not sent to fail inside gRPC.
TEST_F(CliTest, ACheckSubjectThatIsNotUtf8IsRefusedNamingIt) {
  RunResult check = Leash({"check", "fs", "/srv/name\xff"});
  EXPECT_EQ(check.exit_code, 2) << check.out;
  EXPECT_THAT(check.out, HasSubstr("argument '/srv/name\\xff' is not UTF-8 text"));
  EXPECT_THAT(check.out, Not(HasSubstr("libprotobuf")));
  // A name in UTF-8 is checked as usual: the verdict its ASCII sibling in the same folder gets.
  EXPECT_EQ(Leash({"check", "fs", "/srv/name\xc3\xbf"}).exit_code,
            Leash({"check", "fs", "/srv/name"}).exit_code);
}

TEST_F(CliTest, ValidateExitsNonZeroOnErrorsAndCriticalsZeroWithWarningsOnly) {
  // The floor has commands in whitelist mode: no warning.
  EXPECT_EQ(Leash({"validate"}).exit_code, 0);
  // A blacklist-with-allow error, in the file leashd runs on (no write lands one: leashd
  // refuses it, see WritesAndValidateAgree).
  std::string floor = ReadAll(leashd_->config_path());
  ASSERT_TRUE(absl::StrContains(floor, "commands: { mode: whitelist"));
  absl::StrReplaceAll({{"commands: { mode: whitelist", "commands: { mode: blacklist"}}, &floor);
  std::ofstream(leashd_->config_path()) << floor;
  RunResult invalid = Leash({"validate"});
  EXPECT_EQ(invalid.exit_code, 1) << invalid.out;
  EXPECT_THAT(invalid.out, HasSubstr("never consulted"));
  EXPECT_THAT(invalid.out, Not(HasSubstr("(offline:")));
}

// "Writes and validate disagree": one judgement. A write that would make validate exit 1 is
// refused naming the finding, and what leashd will not start on, validate calls an error.
TEST_F(CliTest, WritesAndValidateAgree) {
  const std::string floor = ReadAll(leashd_->config_path());
  RunResult mode = Leash({"net", "mode", "blacklist", "--ack", "network.mode:blacklist"});
  EXPECT_EQ(mode.exit_code, 1) << mode.out;
  EXPECT_THAT(mode.out, HasSubstr("refused (validate): network mode blacklist would leave a "
                                  "policy that `leash validate` reports 1 error in"));
  EXPECT_THAT(mode.out, HasSubstr("  - error: floor network.allow: network is in blacklist mode"));
  // An allow entry on a blacklist surface (the floor's filesystem).
  RunResult allow = Leash({"fs", "allow", fs_->path() + "/work"});
  EXPECT_EQ(allow.exit_code, 1) << allow.out;
  EXPECT_THAT(allow.out, HasSubstr("  - error: floor filesystem.allow: filesystem is in blacklist "
                                   "mode"));
  EXPECT_EQ(ReadAll(leashd_->config_path()), floor) << "a refused write changed the floor";
  EXPECT_EQ(Leash({"validate"}).exit_code, 0);

  // A profile bound over the floor's allow list that makes the network blacklist.
  const std::string open = WriteProfile("open-net", "network: { mode: blacklist }\n");
  ASSERT_EQ(Leash({"profile", "save", "open-net", "--from", open}).exit_code, 0);
  RunResult bound =
      Leash({"bind", "agent:leash-iris", "open-net", "--ack", "network.mode:blacklist"});
  EXPECT_EQ(bound.exit_code, 1) << bound.out;
  EXPECT_THAT(bound.out, HasSubstr("refused (validate): binding 'open-net' to agent:leash-iris"));
  EXPECT_THAT(Leash({"bindings"}).out, Not(HasSubstr("open-net")));

  // What leashd refuses to start on is a validate error: an empty config, one without user:,
  // one whose user does not exist.
  for (const auto& [name, text, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty.yaml", "", "names no user"},
           {"nouser.yaml", "network: { mode: whitelist }\n", "names no user"},
           {"ghost.yaml", "user: lt-no-such-user\n", "'lt-no-such-user' does not exist"}}) {
    const std::string path = files_->Join(name);
    std::ofstream(path) << text;
    RunResult validate = Leash({"validate", "--config", path});
    EXPECT_EQ(validate.exit_code, 1) << name << "\n" << validate.out;
    EXPECT_THAT(validate.out, HasSubstr(says)) << name;
    EXPECT_THAT(validate.out, HasSubstr("leashd does not start")) << name;
  }
}

// "Raw gRPC failures leak out": a profile that is not UTF-8, or over the size cap, is refused
// by the CLI in a sentence naming the file (and the line, or the size and the cap), never with
// protobuf's or gRPC's words. leashd holds the same cap and its own message size limit.
TEST_F(CliTest, RawGrpcFailuresBecomeSentencesNamingTheFileAndTheLimit) {
  const std::string latin1 = WriteProfile("latin1", "network:\n  allow: [\"caf\xe9.example\"]\n");
  RunResult bad = Leash({"profile", "save", "latin1", "--from", latin1});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr(latin1 + ":2: not UTF-8 text; a policy file is UTF-8"));
  EXPECT_THAT(bad.out, Not(HasSubstr("libprotobuf")));
  EXPECT_THAT(bad.out, Not(HasSubstr("answered")));

  std::string big = "network: { allow: [";
  while (big.size() < (size_t{2} << 20)) big += "\"a.example\", ";
  big += "] }\n";
  const std::string large = WriteProfile("big", big);
  const std::string said = absl::StrCat(large, " is ", big.size(),
                                        " bytes, over the 1048576 bytes (1 MiB) a policy file "
                                        "may be; it was not parsed");
  RunResult save = Leash({"profile", "save", "big", "--from", large});
  EXPECT_EQ(save.exit_code, 1) << save.out;
  EXPECT_THAT(save.out, HasSubstr(said));
  EXPECT_THAT(save.out, Not(HasSubstr("Received message larger than max")));
  RunResult validate = Leash({"validate", "--config", large});
  EXPECT_EQ(validate.exit_code, 1) << validate.out;
  EXPECT_THAT(validate.out, HasSubstr(said));

  // Straight to leashd, past the CLI: over the cap and under the socket's limit, the store
  // refuses it unparsed; over the socket's limit (2 MiB, under gRPC's 4 MiB default), gRPC
  // does, with RESOURCE_EXHAUSTED, which the CLI would say as a sentence.
  leash::v1::SaveProfileRequest request;
  request.set_name("big");
  request.set_yaml(big.substr(0, 1536 << 10));
  leash::v1::PolicyWriteResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(leashd_->control().SaveProfile(&context, request, &response).ok());
  EXPECT_EQ(response.refusal().kind(), "profile");
  EXPECT_THAT(response.refusal().message(), HasSubstr("bytes (1 MiB) a policy file may be"));
  request.set_yaml(std::string(3 << 20, 'a'));
  grpc::ClientContext again;
  EXPECT_EQ(leashd_->control().SaveProfile(&again, request, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// "fail_mode typos carry line:column like every other finding", from the file and from leashd.
TEST_F(CliTest, FailModeTyposCarryLineColumn) {
  const std::string typo = files_->Join("typo.yaml");
  std::ofstream(typo) << "user: lcli-user\nfail_mode:  clsoed\n";
  RunResult offline = Leash({"validate", "--config", typo});
  EXPECT_EQ(offline.exit_code, 0) << "a typo is treated as closed: a warning\n" << offline.out;
  EXPECT_THAT(offline.out, HasSubstr(typo + ":2:13: fail_mode 'clsoed' is neither closed nor "
                                            "open and is treated as closed"));
  std::string floor = ReadAll(leashd_->config_path());
  absl::StrReplaceAll({{"fail_mode: closed", "fail_mode: clsoed"}}, &floor);
  std::ofstream(leashd_->config_path()) << floor;
  RunResult live = Leash({"validate"});
  EXPECT_THAT(live.out, HasSubstr(leashd_->config_path() + ":2:12: fail_mode 'clsoed'"));
}

// Audit is a loosening with a token of its own per surface; once bound, `leash status` names
// the audited surfaces of the subject in capitals, `leash validate` warns for each (and still
// exits 0), and a tool call the policy would block is answered allow, logged as a block.
TEST_F(CliTest, AuditTakesItsOwnAckShowsInStatusInCapitalsAndWarnsInValidate) {
  WriteProfile("observe", "network: { audit: true }\ntools: { audit: true }\n");
  ASSERT_EQ(Leash({"profile", "save", "observe", "--from", files_->Join("observe.yaml")}).exit_code,
            0);
  RunResult refused = Leash({"bind", "agent:leash-iris", "observe", "--ack", "network.audit:true"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("tools goes into audit"));
  EXPECT_THAT(refused.out, HasSubstr("--ack 'tools.audit:true'"));
  RunResult bound = Leash({"bind", "agent:leash-iris", "observe", "--ack", "network.audit:true",
                           "--ack", "tools.audit:true"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;

  RunResult status = Leash({"status"});
  EXPECT_THAT(status.out, HasSubstr("    AUDIT (blocks logged with enforced: false, not made): "
                                    "NETWORK (0 would-be blocks), TOOLS (0 would-be blocks) "
                                    "since leashd started\n"))
      << status.out;
  EXPECT_THAT(status.out, ::testing::Not(HasSubstr("\nAUDIT")))  // the floor audits nothing
      << status.out;

  RunResult validate = Leash({"validate"});
  EXPECT_EQ(validate.exit_code, 0) << validate.out;
  // Each finding names where its key is written in the profile, as parse errors do.
  EXPECT_THAT(validate.out, ::testing::ContainsRegex(
                                "warning  profile:observe network.audit: [^\n]*/observe.yaml:1:"
                                "[0-9]+: network is in audit"));
  EXPECT_THAT(validate.out, ::testing::ContainsRegex(
                                "warning  profile:observe tools.audit: [^\n]*/observe.yaml:2:"
                                "[0-9]+: tools is in audit"));

  RunResult checked = Leash({"tool", "check", "forbidden_tool", "--account", "leash-iris",
                             "--tools-socket", leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(checked.exit_code, 0) << checked.out;
  const std::string decisions = files_->Join("decisions.jsonl");
  ASSERT_TRUE(WaitFor(
      [&] { return ReadAll(decisions).find("forbidden_tool") != std::string::npos; },
      absl::Seconds(10)));
  const std::string log = ReadAll(decisions);
  const size_t at = log.rfind('\n', log.find("forbidden_tool"));
  const std::string line = log.substr(at + 1, log.find('\n', at + 1) - at - 1);
  EXPECT_THAT(line, HasSubstr("\"action\":\"block\""));
  EXPECT_THAT(line, HasSubstr("\"enforced\":false"));
  // The call let through is counted beside its surface, in both forms.
  EXPECT_THAT(Leash({"status"}).out, HasSubstr("TOOLS (1 would-be block) since leashd started\n"));
  EXPECT_THAT(Leash({"status", "--json"}).out,
              HasSubstr("\"would_be_blocks\":{\"network\":0,\"filesystem\":0,\"commands\":0,"
                        "\"tools\":1}"));

  // Leaving audit tightens: unbinding takes no ack, and the same call is refused.
  RunResult unbound = Leash({"unbind", "agent:leash-iris"});
  ASSERT_EQ(unbound.exit_code, 0) << unbound.out;
  RunResult enforced = Leash({"tool", "check", "forbidden_tool", "--account", "leash-iris",
                              "--tools-socket", leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(enforced.exit_code, 1) << enforced.out;
  const std::string after = Leash({"status"}).out;
  EXPECT_THAT(after, ::testing::Not(HasSubstr("AUDIT")));
  // What audit let through stays counted (a block enforced is not a would-be block).
  EXPECT_THAT(after, HasSubstr("    would-be blocks while in audit earlier, since leashd started: "
                               "tools 1\n"));
}

TEST_F(CliTest, StatusValidateAndCheckWorkOfflineAndSayTheyDid) {
  ASSERT_TRUE(leashd_->Stop().ok());
  RunResult status = Leash({"status"});
  EXPECT_EQ(status.exit_code, 3) << "a health check: leashd not answering\n" << status.out;
  EXPECT_THAT(status.out, HasSubstr("(offline: leashd is not answering"));
  RunResult json = Leash({"status", "--json"});
  EXPECT_EQ(json.exit_code, 3) << json.out;
  EXPECT_THAT(json.out, HasSubstr("\"offline\":true"));
  EXPECT_THAT(json.out, HasSubstr("\"offline_reason\":\"leashd is not answering"));
  RunResult check = Leash({"check", "net", "floor.example:443"});
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_THAT(check.out, HasSubstr("(offline: judged"));
  RunResult validate = Leash({"validate"});
  EXPECT_EQ(validate.exit_code, 0) << validate.out;
  EXPECT_THAT(validate.out, HasSubstr("(offline: judged"));
}

TEST_F(CliTest, LogsFollowSeesADecisionWrittenAfterItStarted) {
  const std::string log = files_->Join("follow.out");
  auto follow = Background::Start(LeashArgs({"logs", "--follow", "--tail", "0"}), log);
  ASSERT_TRUE(follow.ok());
  absl::SleepFor(absl::Milliseconds(300));  // let it subscribe
  RunResult checked = Leash({"tool", "check", "forbidden_tool", "--account", "leash-iris",
                             "--tools-socket", leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(checked.exit_code, 1) << checked.out;
  EXPECT_TRUE(WaitFor([&] { return ReadAll(log).find("forbidden_tool") != std::string::npos; },
                      absl::Seconds(10)))
      << "logs --follow printed: " << ReadAll(log);
}

// A host off this one (a second namespace joined by a veth pair) connects to a listener that
// leash-iris runs on 0.0.0.0: it gets nothing, and `leash status` shows leash-iris's inbound
// line with the refused SYN-ACKs counted. Serving it takes a binding that acknowledges network.inbound:allow.
TEST_F(CliTest, InboundFromARemoteHostIsDroppedShownInStatusAndServedOnlyWithItsAck) {
  auto remote = NetNamespace::Create();
  ASSERT_TRUE(remote.ok()) << remote.status();
  ASSERT_TRUE(ns_->AddVethTo(**remote, "r0", {"198.51.100.1/24"}, "r1", {"198.51.100.2/24"})
                  .ok());
  // As leash-iris: /usr/bin/python3 lies outside the watched tmpfs, so the exec is not judged.
  const std::string server_log = files_->Join("iris-server.out");
  auto server = Background::Start(
      ns_->ExecSharingMounts(
          agent_->AsUser({"/usr/bin/python3", "-c",
                          "import socket, time\n"
                          "s = socket.socket()\n"
                          "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                          "s.bind(('0.0.0.0', 28080)); s.listen(8); s.settimeout(0.2)\n"
                          "print('listening', flush=True)\n"
                          "end = time.time() + 90\n"
                          "while time.time() < end:\n"
                          "    try:\n"
                          "        c, _ = s.accept(); c.sendall(b'agent\\n'); c.close()\n"
                          "    except OSError:\n"
                          "        pass\n"})),
      server_log);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(WaitFor([&] { return ReadAll(server_log) == "listening\n"; }, absl::Seconds(10)))
      << ReadAll(server_log);
  auto connect = [](const NetNamespace& from, const std::string& address) {
    auto run = from.Run({"/usr/bin/python3", "-c",
                         "import socket, sys\n"
                         "try:\n"
                         "    s = socket.create_connection((sys.argv[1], 28080), timeout=3)\n"
                         "    s.settimeout(3); print(s.recv(64).decode().strip() or 'eof')\n"
                         "except OSError as e:\n"
                         "    print(type(e).__name__)\n",
                         address});
    return run.ok() ? std::string(absl::StripAsciiWhitespace(run->out)) : run.status().ToString();
  };
  EXPECT_EQ(connect(**remote, "198.51.100.1"), "TimeoutError");
  EXPECT_EQ(connect(*ns_, "127.0.0.1"), "agent");  // a local client is served
  RunResult status = Leash({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.out;
  std::string dropped;
  EXPECT_TRUE(RE2::PartialMatch(
      status.out, R"(leash-iris [^\n]*\n    inbound \(drop\): ([0-9]+) packets dropped)",
      &dropped))
      << status.out;
  // The listener's SYN-ACKs, refused at their route lookup into leash-iris's own table
  // (controlplane/inbound_routing.h), are counted under leash-iris.
  EXPECT_THAT(dropped, ::testing::Not(::testing::AnyOf("", "0"))) << status.out;

  // Serving peers off the host is a loosening: refused without its exact token.
  const std::string from = WriteProfile("serve", "network: { inbound: allow }\n");
  ASSERT_EQ(Leash({"profile", "save", "serve", "--from", from}).exit_code, 0);
  RunResult refused = Leash({"bind", "agent:leash-iris", "serve"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("--ack 'network.inbound:allow'"));
  EXPECT_EQ(connect(**remote, "198.51.100.1"), "TimeoutError");
  RunResult bound =
      Leash({"bind", "agent:leash-iris", "serve", "--ack", "network.inbound:allow"});
  EXPECT_EQ(bound.exit_code, 0) << bound.out;
  EXPECT_EQ(connect(**remote, "198.51.100.1"), "agent");
  EXPECT_THAT(Leash({"status"}).out, ::testing::ContainsRegex("inbound \\(allow\\): 0 packets "
                                                              "dropped, [1-9][0-9]* served"));
}

// --json is one JSON object on stdout for every outcome, errors and refusals included; the
// exit code is unchanged; enum values as the YAML spells them, numbers as numbers.
google::protobuf::Struct OneJsonObject(const RunResult& result) {
  google::protobuf::Struct parsed;
  const std::string line(absl::StripTrailingAsciiWhitespace(result.out));
  EXPECT_EQ(line.find('\n'), std::string::npos) << "more than one line:\n" << result.out;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &parsed).ok()) << result.out;
  return parsed;
}

TEST_F(CliTest, JsonIsOneObjectForEveryOutcomeErrorsAndRefusalsIncluded) {
  RunResult blocked = Leash({"--json", "check", "net", "other.example:443"});
  EXPECT_EQ(blocked.exit_code, 1);
  google::protobuf::Struct object = OneJsonObject(blocked);
  EXPECT_FALSE(object.fields().at("ok").bool_value());
  EXPECT_EQ(object.fields().at("exit_code").number_value(), 1);
  EXPECT_EQ(object.fields().at("decision").struct_value().fields().at("action").string_value(),
            "block");

  RunResult unknown = Leash({"--json", "frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  object = OneJsonObject(unknown);
  EXPECT_THAT(object.fields().at("error").string_value(), HasSubstr("unknown command"));
  RunResult bad_flag = Leash({"--json", "--bogus-flag", "status"});
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_THAT(OneJsonObject(bad_flag).fields().at("error").string_value(),
              HasSubstr("unknown flag '--bogus-flag'"));
  RunResult usage = Leash({"--json", "bindings", "extra"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(OneJsonObject(usage).fields().at("error").string_value(),
              HasSubstr("usage: leash bindings"));

  const std::string from = WriteProfile("web", "network: { allow: [\"openai.com\"] }\n");
  ASSERT_EQ(Leash({"profile", "save", "web", "--from", from}).exit_code, 0);
  RunResult refused = Leash({"--json", "bind", "agent:leash-iris", "web"});
  EXPECT_EQ(refused.exit_code, 1);
  object = OneJsonObject(refused);
  EXPECT_FALSE(object.fields().at("ok").bool_value());
  EXPECT_THAT(object.fields().at("error").string_value(), HasSubstr("refused (loosening)"));
  EXPECT_THAT(refused.out, HasSubstr("\"ack_token\":\"network.allow:openai.com\"")) << refused.out;

  RunResult status = Leash({"--json", "status"});
  EXPECT_EQ(status.exit_code, 0) << status.out;
  object = OneJsonObject(status);
  EXPECT_TRUE(object.fields().at("ok").bool_value());
  EXPECT_THAT(status.out, HasSubstr("\"network\":{\"mode\":\"whitelist\""));
  EXPECT_THAT(status.out, Not(HasSubstr("MODE_")));
  EXPECT_EQ(object.fields().at("map_version").kind_case(), google::protobuf::Value::kNumberValue)
      << status.out;
  EXPECT_EQ(object.fields().at("reconcile_passes").kind_case(),
            google::protobuf::Value::kNumberValue);

  RunResult away = leash::testing::Run({RunfilePath("cli/leash"), "--socket=/tmp/no-leashd.sock",
                                        "--config=" + leashd_->config_path(), "--json",
                                        "reconcile"})
                       .value();
  EXPECT_EQ(away.exit_code, 3) << away.out;
  EXPECT_THAT(OneJsonObject(away).fields().at("error").string_value(),
              HasSubstr("leashd is not answering on /tmp/no-leashd.sock"));

  // The host commands, which hand over to leashd: an error before the hand-over, and one
  // leashd itself gives, are each one object.
  RunResult init_usage = Leash({"--json", "init"});
  EXPECT_EQ(init_usage.exit_code, 2) << init_usage.out;
  EXPECT_THAT(OneJsonObject(init_usage).fields().at("error").string_value(),
              HasSubstr("usage: leash init --user"));
  RunResult leashd_both = leash::testing::Run({RunfilePath("controlplane/main/leashd"), "--init",
                                               "--teardown", "--json"})
                              .value();
  EXPECT_EQ(leashd_both.exit_code, 2) << leashd_both.out;
  EXPECT_THAT(OneJsonObject(leashd_both).fields().at("error").string_value(),
              HasSubstr("two commands"));
  RunResult init_refused = leash::testing::Run({RunfilePath("controlplane/main/leashd"), "--init",
                                                "--user=no'user", "--json",
                                                "--config=" + files_->Join("init.yaml")})
                               .value();
  // (a name with a quote is refused before any account is made)
  EXPECT_NE(init_refused.exit_code, 0) << init_refused.out;
  EXPECT_FALSE(OneJsonObject(init_refused).fields().at("ok").bool_value());
  EXPECT_THAT(OneJsonObject(init_refused).fields().at("error").string_value(),
              HasSubstr("could not create the account"));

  // `logs --json` streams the log's lines; a failure ends the stream with the envelope.
  RunResult logs_missing = Leash({"--json", "logs", "--ref", "zzzzzzzz"});
  EXPECT_NE(logs_missing.exit_code, 0) << logs_missing.out;
  const std::string last_line(absl::StripTrailingAsciiWhitespace(
      logs_missing.out.substr(logs_missing.out.rfind('{'))));
  google::protobuf::Struct envelope;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(last_line, &envelope).ok())
      << logs_missing.out;
  EXPECT_FALSE(envelope.fields().at("ok").bool_value());
  EXPECT_THAT(envelope.fields().at("error").string_value(), HasSubstr("zzzzzzzz"));
}

// `leash check commands nc` said allow while an exec of /usr/bin/nc was blocked: a bare name is
// resolved on the system PATH the way an exec would find it, and the output says to what.
// python3 is a link on the system PATH (scripts/lib/deps.sh installs it; Debian links it to
// python3.X): a name allow for python3 and a deny of the program it runs.
TEST_F(CliTest, CheckCommandsBareNameIsResolvedOnTheSystemPath) {
  char real[PATH_MAX];
  ASSERT_NE(realpath("/usr/bin/python3", real), nullptr);
  // The floor's commands are a whitelist: the allow takes its consent.
  ASSERT_EQ(Leash({"cmd", "allow", "python3", "--ack", "commands.allow:python3"}).exit_code, 0);
  ASSERT_EQ(Leash({"cmd", "deny", real}).exit_code, 0);
  RunResult check = Leash({"check", "commands", "python3"});
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_THAT(check.out, HasSubstr(absl::StrCat("matches deny entry '", real, "'")));
  EXPECT_THAT(check.out, HasSubstr(absl::StrCat(", which is ", real, ")")));
  // The name as typed no longer decides: before, the name allow entry answered "allow".
  EXPECT_THAT(check.out, Not(HasSubstr("allow entry 'python3'")));
}

// `leash tool check` as root with no --account: root is no leashed subject. The message names
// the flag to add, and the exit code (7) says nothing was judged, unlike a block (1).
TEST_F(CliTest, ToolCheckAsRootWithoutAccountNamesTheFlagAndHasItsOwnExitCode) {
  RunResult root = Leash({"tool", "check", "read_file", "--tools-socket",
                          leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(root.exit_code, 7) << root.out;
  EXPECT_THAT(root.out, HasSubstr("is not a leashed subject"));
  EXPECT_THAT(root.out, HasSubstr("add --account <agent account>"));
  RunResult nobody = Leash({"tool", "check", "read_file", "--account", "leash-nobody",
                            "--tools-socket", leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(nobody.exit_code, 7) << nobody.out;
  RunResult blocked = Leash({"tool", "check", "forbidden_tool", "--account", "leash-iris",
                             "--tools-socket", leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(blocked.exit_code, 1) << blocked.out;
}

// The unbind ledger recorded `who: unknown (uid 0)`. It records the credentials leashd saw on
// the socket, and the operator behind sudo and the login UID as the client's claim.
TEST_F(CliTest, UnbindLedgerRecordsSudoUserAndLoginUid) {
  const std::string from = WriteProfile("tight", "network: { deny: [\"x.example\"] }\n");
  ASSERT_EQ(Leash({"profile", "save", "tight", "--from", from}).exit_code, 0);
  ASSERT_EQ(Leash({"bind", "agent:leash-iris", "tight"}).exit_code, 0);
  // As `sudo leash unbind` run by alice-operator would see its environment.
  setenv("SUDO_USER", "alice-operator", 1);
  setenv("SUDO_UID", "1234", 1);
  RunResult removed = Leash({"unbind", "agent:leash-iris"});
  std::string token;
  if (removed.exit_code != 0) {
    // Removing a deny loosens: re-run with the token the refusal asks for.
    EXPECT_TRUE(RE2::PartialMatch(removed.out, R"(--ack '([^']+)')", &token)) << removed.out;
    removed = Leash({"unbind", "agent:leash-iris", "--ack", token});
  }
  unsetenv("SUDO_USER");
  unsetenv("SUDO_UID");
  ASSERT_EQ(removed.exit_code, 0) << removed.out;
  const std::string written = ReadAll(leashd_->state_dir() + "/unbinds.jsonl");
  EXPECT_THAT(written, HasSubstr("uid 0 (root), pid "));
  EXPECT_THAT(written, HasSubstr("claimed by the client: sudo from alice-operator (SUDO_UID 1234)"));
  EXPECT_THAT(written, ::testing::AnyOf(HasSubstr("login uid "), HasSubstr("no login uid")));
  EXPECT_THAT(written, Not(HasSubstr("unknown")));
}

TEST_F(CliTest, HelpListsEveryCommandAndFlag) {
  RunResult help = Leash({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* word :
       {"init --user", "status", "validate", "check <surface>", "allow|deny <entry>",
        "mode whitelist|blacklist", "profile save", "profile list", "bind global|agent:",
        "unbind", "bindings", "reconcile", "tool check", "logs [--follow] [--tail N]",
        "restart", "teardown", "--config", "--json", "--ack", "--no-reconcile", "--offline",
        "--account", "--socket", "--tools-socket", "exit codes"}) {
    EXPECT_THAT(help.out, HasSubstr(word)) << "leash --help does not mention " << word;
  }
  for (const char* command : {"validate", "check", "profile", "bind", "unbind", "tool", "logs",
                              "init", "teardown"}) {
    RunResult one = Leash({command, "--help"});
    EXPECT_EQ(one.exit_code, 0);
    EXPECT_THAT(one.out, HasSubstr(absl::StrCat("usage: leash ", command))) << command;
  }
}

}  // namespace
}  // namespace leash::testing
