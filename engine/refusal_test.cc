// The refusals' exact texts (golden), for every refusal of rules P2 to P8
// (docs/ARCHITECTURE.md), and the re-run line's quoting.
#include "engine/refusal.h"

#include "engine/consent.h"
#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Fragment;
using ::leash::engine::testing::Library;

constexpr char kFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
commands: {mode: blacklist, deny: [ssh]}
)";

TEST(ShellQuote, PlainWordsStayBareOthersAreSingleQuoted) {
  EXPECT_EQ(ShellQuote("agent:leash-iris"), "agent:leash-iris");
  EXPECT_EQ(ShellQuote("web research"), "'web research'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

TEST(RenderCommand, AppendsEveryAckQuoted) {
  EXPECT_EQ(RenderCommand({"sudo", "leash", "unbind", "global"}, {"fail_closed:a", "x.allow:it's"}),
            "sudo leash unbind global --ack 'fail_closed:a' --ack 'x.allow:it'\\''s'");
}

TEST(RenderRefusal, BindLooseningGolden) {
  Bindings bindings;
  ProfileLibrary profiles;
  Resolver resolver(Floor(kFloor), bindings, profiles);
  BindJudgement j =
      JudgeBind(resolver, Scope::Agent("leash-iris"), "web-research",
                Fragment("network: {allow: [github.com, openai.com]}\nfail_mode: open"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(RenderRefusal(*j.refusal), R"(refused (loosening): binding profile 'web-research' to agent:leash-iris loosens its policy in 2 ways without consent; each needs its own --ack
  - agent:leash-iris: fail_mode goes from closed to open: when an enforcer cannot decide, it allows
      --ack 'fail_mode:open'
  - agent:leash-iris: network.allow gains 'openai.com' while network is in whitelist mode (default-deny): 'openai.com' becomes allowed
      --ack 'network.allow:openai.com'
re-run with consent:
  sudo leash bind agent:leash-iris web-research --ack 'fail_mode:open' --ack 'network.allow:openai.com'
)");
}

TEST(RenderRefusal, GlobalGateGolden) {
  Bindings bindings;
  ProfileLibrary profiles;
  Resolver resolver(Floor(kFloor), bindings, profiles);
  BindJudgement j = JudgeBind(resolver, Scope::Global(), "wide-open",
                              Fragment("fail_mode: open\nnetwork: {mode: blacklist}"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(RenderRefusal(*j.refusal), R"(refused (loosening): binding profile 'wide-open' globally loosens the floor for every subject on the host in 2 ways without consent; each needs its own --ack
  - global: fail_mode goes from closed to open: when an enforcer cannot decide, it allows
      --ack 'fail_mode:open'
  - global: network goes from whitelist (default-deny) to blacklist (default-allow): everything its deny list does not name is allowed
      --ack 'network.mode:blacklist'
re-run with consent:
  sudo leash bind global wide-open --ack 'fail_mode:open' --ack 'network.mode:blacklist'
)");
}

TEST(RenderRefusal, DisplayNameScopeGolden) {
  ScopeCheck check = CheckScopeForWrite("agent:Iris", {"leash-iris", "leash-ops"}, "fido");
  leash::v1::Refusal refusal =
      RefuseScope(check, {"sudo", "leash", "bind", "agent:Iris", "web-research"}, 3, {});
  EXPECT_EQ(RenderRefusal(refusal), R"(refused (scope): scope 'agent:Iris': 'Iris' is not a Linux account name (a display name?); a scope names the account discovery reads from passwd, e.g. agent:leash-iris; the account for 'Iris' is leash-iris: write agent:leash-iris
re-run:
  sudo leash bind agent:leash-iris web-research
)");
}

TEST(RenderRefusal, TeamScopeGolden) {
  ScopeCheck check = CheckScopeForWrite("team:red", {"leash-iris"}, "fido");
  leash::v1::Refusal refusal =
      RefuseScope(check, {"sudo", "leash", "bind", "team:red", "web-research"}, 3, {});
  EXPECT_EQ(RenderRefusal(refusal), R"(refused (scope): scope 'team:red': team is not a policy tier (removed 2026-10-14); a team that should share a policy binds one profile to each of its agents: leash bind agent:<account> <profile>
)");
}

TEST(RenderRefusal, ProfileSaveNamesEachSubjectGolden) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "web-research", {}},
                     {"agent:leash-vader", "web-research", {}}});
  ProfileLibrary profiles = Library({{"web-research", "network: {allow: [github.com]}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ProfileEditJudgement j = JudgeProfileEdit(
      resolver, "web-research", Fragment("network: {allow: [github.com, openai.com]}"),
      {"agent:leash-iris=network.allow:openai.com"}, "web-research.yaml");
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(RenderRefusal(*j.refusal), R"(refused (loosening): saving profile 'web-research' would loosen 1 bound subject beyond its own acks: agent:leash-vader (1 way); each agent's consent is an --ack 'agent:<account>=<token>' for that agent alone
  - agent:leash-vader: network.allow gains 'openai.com' while network is in whitelist mode (default-deny): 'openai.com' becomes allowed
      --ack 'agent:leash-vader=network.allow:openai.com'
re-run with consent:
  sudo leash profile save web-research --from web-research.yaml --ack 'agent:leash-iris=network.allow:openai.com' --ack 'agent:leash-vader=network.allow:openai.com'
)");
}

TEST(RenderRefusal, UnbindDanglingGolden) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "web-research", {}}});
  ProfileLibrary profiles;
  UnbindJudgement j = JudgeUnbind(Floor(kFloor), bindings, profiles, "agent:leash-iris",
                                  {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(RenderRefusal(*j.refusal), R"(refused (loosening): removing the binding of agent:leash-iris to 'web-research' loosens the subject's policy in 1 way without consent; each needs its own --ack
  - agent:leash-iris: removing the binding of agent:leash-iris to 'web-research' returns it from fail-closed (denied everything; its profile 'web-research' is deleted) to the policy beneath it
      --ack 'fail_closed:web-research'
re-run with consent:
  sudo leash unbind agent:leash-iris --ack 'fail_closed:web-research'
)");
}

TEST(RenderRefusal, UnbindUnjudgeableGolden) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "web-research", {}}});
  ProfileLibrary profiles;
  UnbindJudgement j = JudgeUnbind(
      absl::PermissionDeniedError("open /etc/leash/leash.yaml: Permission denied"), bindings,
      profiles, "agent:leash-iris", {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(RenderRefusal(*j.refusal), R"(refused (unjudgeable): removing the binding of agent:leash-iris cannot be judged because the floor cannot be read (open /etc/leash/leash.yaml: Permission denied); fix the floor and run the unbind again
re-run:
  sudo leash unbind agent:leash-iris
)");
}

TEST(RenderRefusal, InertEntryGolden) {
  std::optional<leash::v1::Refusal> refusal = RefuseInertEntries(
      "profile 'web-research'", Fragment("network: {allow: ['https://openai.com'], deny: ['~x']}"));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(RenderRefusal(*refusal), R"(refused (entry): profile 'web-research' carries 2 entries that can never match; fix or remove them and write again (an inert deny blocks nothing; an inert allow allows nothing)
entries that can never match:
  - network.allow: 'https://openai.com': a URL; a network entry is a host, IP or CIDR with an optional :port (e.g. github.com or github.com:443)
  - network.deny: '~x': character '~' is not allowed in a host name
)");
}

}  // namespace
}  // namespace leash::engine
