// The operator's entries and profiles against a real leashd: `leash <surface> list`, `leash
// <surface> remove <entry>` (removing an allow tightens; removing a deny is refused until its
// --ack, which the refusal names), `leash profile delete` refused while the profile is bound,
// and `leash bindings` marking a dangling binding, also one whose profile file was removed by
// hand (leashd keeps its subject fail-closed and shows it).
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/agent_fixture.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class EntriesTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeViewedHost("lent-user", {"leash-iris"}, "lent"));
    const std::string floor = absl::StrCat(
        "# the host's floor: ask before loosening\n"
        "user: lent-user\n"
        "fail_mode: closed\n"
        "network: { mode: whitelist, allow: [\"floor.example\", \"extra.example\"], "
        "deny: [\"bad.example\"] }  # web\n"
        "commands:\n"
        "  mode: blacklist\n"
        "  deny:\n"
        "    - ssh   # no remote shells\n"
        "    - nc\n"
        "logging: { level: info, decisions: ",
        decisions(), " }\n");
    ASSERT_NO_FATAL_FAILURE(StartLeashd(floor));
  }
};

TEST_F(EntriesTest, ListShowsEachEntryWithItsTierAndFileAlsoInJson) {
  ASSERT_EQ(Leash({"profile", "save", "web", "--from",
                   WriteProfile("web", "network: { deny: [\"x.example\"] }\n")})
                .exit_code,
            0);
  ASSERT_EQ(Leash({"bind", "agent:leash-iris", "web"}).exit_code, 0);
  RunResult list = Leash({"net", "list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.out, HasSubstr("network (floor mode: whitelist)\n"));
  EXPECT_THAT(list.out, ::testing::ContainsRegex(
                            "  allow floor\\.example +floor  " + leashd_->config_path()));
  EXPECT_THAT(list.out, ::testing::ContainsRegex("  deny  bad\\.example +floor  "));
  EXPECT_THAT(list.out, ::testing::ContainsRegex(absl::StrCat(
                            "  deny  x\\.example +profile:web  ", leashd_->state_dir(),
                            "/profiles/web\\.yaml  \\(bound to agent:leash-iris\\)")));
  RunResult json = Leash({"network", "list", "--json"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_THAT(json.out, HasSubstr("{\"surface\":\"network\",\"list\":\"deny\",\"entry\":"
                                  "\"x.example\",\"source\":\"profile:web\""));
  EXPECT_THAT(json.out, HasSubstr("\"floor_modes\":{\"network\":\"whitelist\"}"));
}

TEST_F(EntriesTest, RemoveOfAnAllowTightensAndKeepsTheFilesCommentsAndIsInForce) {
  RunResult before = Leash({"check", "net", "extra.example:443"});
  ASSERT_EQ(before.exit_code, 0) << before.out;
  RunResult removed = Leash({"net", "remove", "extra.example"});
  EXPECT_EQ(removed.exit_code, 0) << removed.out;
  EXPECT_THAT(removed.out, HasSubstr("written"));
  const std::string floor = ReadAll(leashd_->config_path());
  EXPECT_THAT(floor, HasSubstr("# the host's floor: ask before loosening\n"));
  EXPECT_THAT(floor, HasSubstr("network: { mode: whitelist, allow: [\"floor.example\"], "
                               "deny: [\"bad.example\"] }  # web\n"));
  EXPECT_THAT(floor, HasSubstr("    - ssh   # no remote shells\n"));
  RunResult after = Leash({"check", "net", "extra.example:443"});
  EXPECT_EQ(after.exit_code, 1) << "the removal is in force\n" << after.out;
  // An entry that is not there: exit 1, saying so.
  RunResult absent = Leash({"net", "remove", "extra.example"});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_THAT(absent.out, HasSubstr("has no network.allow or deny entry 'extra.example'"));
}

TEST_F(EntriesTest, RemoveOfADenyIsRefusedNamingItsAckAndTheAckedRerunIsInForce) {
  const std::string floor_before = ReadAll(leashd_->config_path());
  RunResult refused = Leash({"cmd", "remove", "ssh"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (loosening): removing 'ssh' from the floor's "
                                     "commands.deny loosens the floor for every subject on "
                                     "the host in 1 way"));
  EXPECT_THAT(refused.out, HasSubstr("      --ack 'unset.deny:commands:ssh'\n"));
  EXPECT_THAT(refused.out, HasSubstr("re-run with consent:\n  sudo leash commands remove ssh "
                                     "--ack 'unset.deny:commands:ssh'\n"));
  EXPECT_EQ(ReadAll(leashd_->config_path()), floor_before);
  RunResult json = Leash({"cmd", "remove", "ssh", "--json"});
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_THAT(json.out, HasSubstr("\"ack_token\":\"unset.deny:commands:ssh\""));

  RunResult blocked = Leash({"check", "cmd", "/usr/bin/ssh"});
  EXPECT_EQ(blocked.exit_code, 1) << blocked.out;
  RunResult acked = Leash({"cmd", "remove", "ssh", "--ack", "unset.deny:commands:ssh"});
  EXPECT_EQ(acked.exit_code, 0) << acked.out;
  const std::string floor = ReadAll(leashd_->config_path());
  EXPECT_THAT(floor, Not(HasSubstr("ssh")));
  EXPECT_THAT(floor, HasSubstr("  deny:\n    - nc\nlogging:"));
  RunResult allowed = Leash({"check", "cmd", "/usr/bin/ssh"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out;
}

TEST_F(EntriesTest, ProfileDeleteRefusedWhenBoundAndBindingsMarkDangling) {
  ASSERT_EQ(Leash({"profile", "save", "web", "--from",
                   WriteProfile("web", "network: { deny: [\"x.example\"] }\n")})
                .exit_code,
            0);
  ASSERT_EQ(Leash({"bind", "agent:leash-iris", "web"}).exit_code, 0);
  RunResult refused = Leash({"profile", "delete", "web"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("refused (dangling): profile 'web' is still bound to "
                                     "agent:leash-iris"));
  EXPECT_THAT(refused.out, HasSubstr("unbind first (each unbind judged on its own): sudo leash "
                                     "unbind agent:leash-iris"));
  EXPECT_THAT(refused.out, HasSubstr("      --ack 'dangling:agent:leash-iris'\n"));
  EXPECT_THAT(refused.out, HasSubstr("re-run with consent:\n  sudo leash profile delete web "
                                     "--ack 'dangling:agent:leash-iris'\n"));
  RunResult bindings = Leash({"bindings"});
  EXPECT_EQ(bindings.out, "agent:leash-iris -> web\n");
  EXPECT_EQ(Leash({"check", "net", "floor.example:443", "--account", "leash-iris"}).exit_code, 0);

  RunResult deleted = Leash({"profile", "delete", "web", "--ack", "dangling:agent:leash-iris"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.out;
  EXPECT_THAT(deleted.out, HasSubstr("note: agent:leash-iris is still bound to 'web', which now "
                                     "dangles"));
  bindings = Leash({"bindings"});
  EXPECT_THAT(bindings.out, HasSubstr("agent:leash-iris -> web  DANGLING\n"));
  EXPECT_THAT(bindings.out, HasSubstr("sudo leash unbind agent:leash-iris --ack "
                                      "'fail_closed:web'"));
  RunResult json = Leash({"bindings", "--json"});
  EXPECT_THAT(json.out, HasSubstr("\"dangling\":true"));
  // Denied everything, not returned to the floor.
  EXPECT_EQ(Leash({"check", "net", "floor.example:443", "--account", "leash-iris"}).exit_code, 1);
}

TEST_F(EntriesTest, AProfileFileRemovedByHandLeavesItsSubjectFailClosedAndMarkedDangling) {
  ASSERT_EQ(Leash({"profile", "save", "web", "--from",
                   WriteProfile("web", "network: { deny: [\"x.example\"] }\n")})
                .exit_code,
            0);
  ASSERT_EQ(Leash({"bind", "agent:leash-iris", "web"}).exit_code, 0);
  ASSERT_EQ(unlink(absl::StrCat(leashd_->state_dir(), "/profiles/web.yaml").c_str()), 0);
  ASSERT_EQ(Leash({"reconcile"}).exit_code, 0);
  RunResult bindings = Leash({"bindings"});
  EXPECT_THAT(bindings.out, HasSubstr("agent:leash-iris -> web  DANGLING\n"));
  RunResult check = Leash({"check", "net", "floor.example:443", "--account", "leash-iris"});
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_THAT(check.out, HasSubstr("denied everything"));
  RunResult status = Leash({"status"});
  EXPECT_THAT(status.out, HasSubstr("no-policy"));
}

}  // namespace
}  // namespace leash::testing
