// Consent judgement: bind, profile edit, unbind and validate's tier findings, each test named
// for the rule it checks (docs/ARCHITECTURE.md, rules P3 to P6).
#include "engine/consent.h"
#include "engine/refusal.h"
#include "engine/validate.h"

#include <algorithm>
#include <ostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Fragment;
using ::leash::engine::testing::Library;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
commands: {mode: blacklist, deny: [ssh]}
)";

std::vector<std::string> Tokens(const leash::v1::Refusal& refusal) {
  std::vector<std::string> out;
  for (const leash::v1::Loosening& l : refusal.loosenings()) out.push_back(l.ack_token());
  return out;
}

std::vector<std::string> Scopes(const leash::v1::Refusal& refusal) {
  std::vector<std::string> out;
  for (const leash::v1::Loosening& l : refusal.loosenings()) out.push_back(l.scope());
  return out;
}

struct World {
  leash::v1::Config floor = Floor(kFloor);
  Bindings bindings;
  ProfileLibrary profiles;
  Resolver resolver() const { return Resolver(floor, bindings, profiles); }
};

constexpr char kWebResearch[] = "network: {allow: [github.com, openai.com]}\nfail_mode: open";

// --- bind ----------------------------------------------------------------------------------

TEST(JudgeBind, RefusalListsEveryLoosening) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "web-research",
                              Fragment(kWebResearch), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "loosening");
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("fail_mode:open", "network.allow:openai.com"));
  EXPECT_THAT(Scopes(*j.refusal), ElementsAre("agent:leash-iris", "agent:leash-iris"));
  EXPECT_EQ(j.refusal->rerun(),
            "sudo leash bind agent:leash-iris web-research --ack 'fail_mode:open' --ack "
            "'network.allow:openai.com'");
}

TEST(JudgeBind, RefusalListsOnlyWhatIsUnacknowledgedButRerunCarriesEveryAck) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "web-research",
                              Fragment(kWebResearch), {"fail_mode:open"});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("network.allow:openai.com"));
  EXPECT_THAT(j.refusal->rerun(), HasSubstr("--ack 'fail_mode:open' --ack "
                                            "'network.allow:openai.com'"));
}

TEST(JudgeBind, AcknowledgementLivesOnTheBinding) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "web-research",
                              Fragment(kWebResearch),
                              {"network.allow:openai.com", "fail_mode:open"});
  ASSERT_FALSE(j.refusal.has_value()) << j.refusal->message();
  EXPECT_EQ(j.binding.scope, "agent:leash-iris");
  EXPECT_EQ(j.binding.profile, "web-research");
  EXPECT_THAT(j.binding.acks, ElementsAre("fail_mode:open", "network.allow:openai.com"));
}

// Serving peers off the host is a loosening like network.udp: allow: refused without its exact
// token, and bound with it.
TEST(JudgeBind, InboundAllowNeedsItsOwnAck) {
  World w;
  const leash::v1::Config serve = Fragment("network: {inbound: allow}");
  BindJudgement refused = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "serve", serve,
                                    {"network.udp:allow"});
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_THAT(Tokens(*refused.refusal), ElementsAre("network.inbound:allow"));
  EXPECT_THAT(refused.refusal->rerun(),
              HasSubstr("sudo leash bind agent:leash-iris serve --ack 'network.inbound:allow'"));
  BindJudgement bound = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "serve", serve,
                                  {"network.inbound:allow"});
  ASSERT_FALSE(bound.refusal.has_value()) << bound.refusal->message();
  EXPECT_THAT(bound.binding.acks, ElementsAre("network.inbound:allow"));
  // Saying drop, the default, tightens nothing and needs nothing.
  BindJudgement drop = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "quiet",
                                 Fragment("network: {inbound: drop}"), {});
  EXPECT_FALSE(drop.refusal.has_value());
}

// Audit lets through what the policy would block, so each surface put in audit needs its own
// token on the binding; leaving audit is a tightening and needs nothing.
TEST(JudgeBind, AuditNeedsItsOwnAckPerSurface) {
  World w;
  const leash::v1::Config observe =
      Fragment("network: {audit: true}\nfilesystem: {audit: true}\ntools: {audit: true}");
  BindJudgement refused = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "observe", observe,
                                    {"network.audit:true"});
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_THAT(Tokens(*refused.refusal), ElementsAre("filesystem.audit:true", "tools.audit:true"));
  EXPECT_THAT(refused.refusal->rerun(),
              HasSubstr("--ack 'network.audit:true' --ack 'filesystem.audit:true' --ack "
                        "'tools.audit:true'"));
  BindJudgement bound =
      JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "observe", observe,
                {"network.audit:true", "filesystem.audit:true", "tools.audit:true"});
  ASSERT_FALSE(bound.refusal.has_value()) << bound.refusal->message();
  // A global binding is judged against the unfolded floor the same way.
  BindJudgement global = JudgeBind(w.resolver(), Scope::Global(), "observe", observe, {});
  ASSERT_TRUE(global.refusal.has_value());
  EXPECT_THAT(Tokens(*global.refusal),
              ElementsAre("network.audit:true", "filesystem.audit:true", "tools.audit:true"));
  BindJudgement off = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "enforce",
                                Fragment("commands: {audit: false}"), {});
  EXPECT_FALSE(off.refusal.has_value());
}

// DNS straight to the resolvers (no filter) is a loosening of the filter: refused without its
// exact token, bound with it; saying filter, the default, needs nothing.
TEST(JudgeBind, DnsStraightToTheResolversNeedsItsOwnAck) {
  World w;
  const leash::v1::Config open_dns = Fragment("network: {dns: resolvers}");
  BindJudgement refused =
      JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "open-dns", open_dns, {});
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_THAT(Tokens(*refused.refusal), ElementsAre("network.dns:resolvers"));
  EXPECT_THAT(refused.refusal->rerun(),
              HasSubstr("sudo leash bind agent:leash-iris open-dns --ack 'network.dns:resolvers'"));
  BindJudgement bound = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "open-dns", open_dns,
                                  {"network.dns:resolvers"});
  ASSERT_FALSE(bound.refusal.has_value()) << bound.refusal->message();
  EXPECT_FALSE(JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "filtered",
                         Fragment("network: {dns: filter}"), {})
                   .refusal.has_value());
}

TEST(JudgeBind, AcksAreMatchedExactly) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "p",
                              Fragment("network: {allow: [github.com, OpenAI.com]}"),
                              {"network.allow:openai.com"});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("network.allow:OpenAI.com"));
}

TEST(JudgeBind, AProfileMayTightenTheFloorFreely) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "strict",
                              Fragment("network: {allow: [], deny: [evil.com, x.io]}\n"
                                       "commands: {mode: whitelist, allow: [git]}"),
                              {});
  EXPECT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.binding.acks, IsEmpty());
}

TEST(JudgeBind, AnAckNothingNeedsIsNotRecorded) {
  World w;
  BindJudgement j =
      JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "strict",
                Fragment("network: {deny: [evil.com, x.io]}"), {"fail_mode:open"});
  ASSERT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.binding.acks, IsEmpty());
  EXPECT_THAT(j.notices, Contains(HasSubstr("--ack 'fail_mode:open' is not needed")));
}

TEST(JudgeBind, MalformedAckRefused) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "strict",
                              Fragment("{}"), {"network.allow"});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "ack");
}

TEST(JudgeBind, InertEntriesRefusedOnWrite) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "bad",
                              Fragment("network: {deny: ['http://evil.com']}"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "entry");
  ASSERT_EQ(j.refusal->inert_entries_size(), 1);
  EXPECT_EQ(j.refusal->inert_entries(0).field(), "network.deny");
  EXPECT_EQ(j.refusal->inert_entries(0).entry(), "http://evil.com");
}

TEST(JudgeBind, GlobalBindingJudgedAgainstUnfoldedFloor) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Global(), "wide-open",
                              Fragment("fail_mode: open\nnetwork: {mode: blacklist}"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("fail_mode:open", "network.mode:blacklist"));
  EXPECT_THAT(Scopes(*j.refusal), ElementsAre("global", "global"));
  EXPECT_THAT(j.refusal->message(), HasSubstr("for every subject on the host"));
  EXPECT_EQ(j.refusal->rerun(), "sudo leash bind global wide-open --ack 'fail_mode:open' --ack "
                                "'network.mode:blacklist'");
}

TEST(JudgeBind, GlobalIsJudgedAgainstTheFloorNotTheCurrentGlobal) {
  // The floor is the baseline: a global binding already in place does not lower the bar.
  World w;
  w.bindings.Put({"global", "open", {"fail_mode:open"}});
  w.profiles = Library({{"open", "fail_mode: open"}});
  BindJudgement j =
      JudgeBind(w.resolver(), Scope::Global(), "open2", Fragment("fail_mode: open"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("fail_mode:open"));
}

TEST(JudgeBind, BindGlobalSaysItChangesTheFloorForEverySubject) {
  World w;
  BindJudgement j = JudgeBind(w.resolver(), Scope::Global(), "strict",
                              Fragment("commands: {deny: [ssh, curl]}"), {});
  ASSERT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.notices,
              Contains("bind global changes the floor for every subject on the host"));
}

TEST(JudgeBind, BindGlobalNamesAgentsThatWouldNoLongerResolve) {
  World w;
  w.bindings.Put({"agent:leash-iris", "research", {}});
  w.profiles = Library({{"research", "network: {allow: [github.com, openai.com]}"}});
  w.floor = Floor("network: {allow: [github.com, openai.com]}");
  BindJudgement j = JudgeBind(w.resolver(), Scope::Global(), "github-only",
                              Fragment("network: {allow: [github.com]}"), {});
  ASSERT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.notices, Contains(AllOf(HasSubstr("agent:leash-iris does not resolve"),
                                        HasSubstr("network.allow:openai.com"))));
}

TEST(JudgeBind, ConsentCheckAgainstTheFloorFileReportsWhatGlobalAlreadyLoosened) {
  // "a field a scope: global binding already loosened is reported here and not at run start
  // (a refusal where none was needed — closed)".
  World w;
  w.bindings.Put({"global", "open", {"fail_mode:open"}});
  w.profiles = Library({{"open", "fail_mode: open"}});
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "also-open",
                              Fragment("fail_mode: open"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("fail_mode:open"));
  // Run start would not have asked: against the folded base it changes nothing.
  Bindings with = w.bindings;
  with.Put({"agent:leash-iris", "also-open", {}});
  ProfileLibrary profiles = Library({{"open", "fail_mode: open"}, {"also-open", "fail_mode: open"}});
  EXPECT_TRUE(Resolver(w.floor, with, profiles).Resolve("leash-iris").ok());
}

TEST(JudgeBind, AgentAlsoJudgedAgainstTheFoldedBaseSoRunStartNeverRefusesItLate) {
  World w;
  w.floor = Floor("network: {allow: [github.com, openai.com]}");
  w.bindings.Put({"global", "github-only", {}});
  w.profiles = Library({{"github-only", "network: {allow: [github.com]}"}});
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "research",
                              Fragment("network: {allow: [github.com, openai.com]}"), {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("network.allow:openai.com"));
}

TEST(JudgeBind, RebindingSaysWhatItReplaces) {
  World w;
  w.bindings.Put({"agent:leash-iris", "old", {}});
  w.profiles = Library({{"old", "{}"}});
  BindJudgement j = JudgeBind(w.resolver(), Scope::Agent("leash-iris"), "new", Fragment("{}"), {});
  EXPECT_THAT(j.notices, Contains("replaces agent:leash-iris's binding to 'old'"));
}

TEST(RefuseScope, DisplayNameRefusalNamesTheAccountInTheRerunLine) {
  ScopeCheck check = CheckScopeForWrite("agent:Iris", {"leash-iris"}, "fido");
  leash::v1::Refusal refusal = RefuseScope(
      check, {"sudo", "leash", "bind", "agent:Iris", "web-research"}, 3, {"fail_mode:open"});
  EXPECT_EQ(refusal.kind(), "scope");
  EXPECT_EQ(refusal.rerun(),
            "sudo leash bind agent:leash-iris web-research --ack 'fail_mode:open'");
}

// --- profile edit --------------------------------------------------------------------------

World TwoAgentsOnWebResearch() {
  World w;
  w.bindings.Put({"agent:leash-iris", "web-research", {}});
  w.bindings.Put({"agent:leash-vader", "web-research", {}});
  w.bindings.Put({"agent:leash-ops", "other", {}});
  w.profiles = Library({{"web-research", "network: {allow: [github.com]}"}, {"other", "{}"}});
  return w;
}

// A profile save never takes the global binding's consent: its loosening is listed without an
// --ack line (none would be accepted), and the message says to bind the edit globally instead.
TEST(JudgeProfileEdit, AGlobalBindingsLooseningIsListedWithoutAnAckItCouldNotTake) {
  World w;
  w.bindings.Put({"global", "web-research", {}});
  w.profiles = Library({{"web-research", "network: {allow: [github.com]}"}});
  ProfileEditJudgement j =
      JudgeProfileEdit(w.resolver(), "web-research",
                       Fragment("network: {allow: [github.com, openai.com]}"), {},
                       "web-research.yaml");
  ASSERT_TRUE(j.refusal.has_value());
  ASSERT_EQ(j.refusal->loosenings_size(), 1);
  EXPECT_EQ(j.refusal->loosenings(0).scope(), "global");
  EXPECT_EQ(j.refusal->loosenings(0).ack_token(), "");
  EXPECT_THAT(j.refusal->message(),
              HasSubstr("Consent for the global binding is never taken by a profile save"));
  EXPECT_THAT(RenderRefusal(*j.refusal), Not(HasSubstr("\n      --ack ")));
}

TEST(JudgeProfileEdit, EditingAProfileRevalidatesEveryBindingThatNamesIt) {
  World w = TwoAgentsOnWebResearch();
  ProfileEditJudgement j =
      JudgeProfileEdit(w.resolver(), "web-research",
                       Fragment("network: {allow: [github.com, openai.com]}"), {},
                       "web-research.yaml");
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "loosening");
  EXPECT_THAT(Scopes(*j.refusal), ElementsAre("agent:leash-iris", "agent:leash-vader"));
  // Each as a profile save takes it: for that agent.
  EXPECT_THAT(Tokens(*j.refusal),
              ElementsAre("agent:leash-iris=network.allow:openai.com",
                          "agent:leash-vader=network.allow:openai.com"));
  EXPECT_THAT(j.refusal->message(),
              HasSubstr("would loosen 2 bound subjects beyond its own acks: agent:leash-iris "
                        "(1 way), agent:leash-vader (1 way)"));
  EXPECT_EQ(j.refusal->rerun(),
            "sudo leash profile save web-research --from web-research.yaml --ack "
            "'agent:leash-iris=network.allow:openai.com' --ack "
            "'agent:leash-vader=network.allow:openai.com'");
  EXPECT_THAT(j.gained, IsEmpty());
}

TEST(JudgeProfileEdit, EachAckIsAppendedToThatAgentsBindingOnly) {
  World w = TwoAgentsOnWebResearch();
  // The same token for another agent of the same profile needs its own.
  ProfileEditJudgement refused =
      JudgeProfileEdit(w.resolver(), "web-research",
                       Fragment("network: {allow: [github.com, openai.com]}"),
                       {"agent:leash-iris=network.allow:openai.com"}, "f.yaml");
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_THAT(Scopes(*refused.refusal), ElementsAre("agent:leash-vader"));

  ProfileEditJudgement ok =
      JudgeProfileEdit(w.resolver(), "web-research",
                       Fragment("network: {allow: [github.com, openai.com]}"),
                       {"agent:leash-iris=network.allow:openai.com",
                        "agent:leash-vader=network.allow:openai.com"},
                       "f.yaml");
  ASSERT_FALSE(ok.refusal.has_value()) << ok.refusal->message();
  EXPECT_THAT(ok.gained, ElementsAre("agent:leash-iris", "agent:leash-vader"));
  EXPECT_THAT(ok.bindings.Find("agent:leash-iris")->acks, ElementsAre("network.allow:openai.com"));
  EXPECT_THAT(ok.bindings.Find("agent:leash-vader")->acks,
              ElementsAre("network.allow:openai.com"));
  EXPECT_THAT(ok.bindings.Find("agent:leash-ops")->acks, IsEmpty());
}

TEST(JudgeProfileEdit, AckForAnAgentNotBoundToTheProfileIsRefused) {
  World w = TwoAgentsOnWebResearch();
  ProfileEditJudgement j = JudgeProfileEdit(w.resolver(), "web-research", Fragment("{}"),
                                            {"agent:leash-ops=fail_mode:open"}, "f.yaml");
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "ack");
  EXPECT_THAT(j.refusal->message(), HasSubstr("agent:leash-ops is not bound to profile "
                                              "'web-research'"));
}

TEST(JudgeProfileEdit, ConsentForTheGlobalBindingIsNeverTakenThisWay) {
  World w;
  w.bindings.Put({"global", "base", {}});
  w.profiles = Library({{"base", "{}"}});
  ProfileEditJudgement with_ack = JudgeProfileEdit(w.resolver(), "base",
                                                   Fragment("fail_mode: open"),
                                                   {"global=fail_mode:open"}, "base.yaml");
  ASSERT_TRUE(with_ack.refusal.has_value());
  EXPECT_EQ(with_ack.refusal->kind(), "ack");
  EXPECT_THAT(with_ack.refusal->message(), HasSubstr("leash bind global"));

  ProfileEditJudgement without = JudgeProfileEdit(w.resolver(), "base",
                                                  Fragment("fail_mode: open"), {}, "base.yaml");
  ASSERT_TRUE(without.refusal.has_value());
  EXPECT_EQ(without.refusal->kind(), "loosening");
  EXPECT_THAT(Scopes(*without.refusal), ElementsAre("global"));
  EXPECT_THAT(without.refusal->message(), HasSubstr("sudo leash bind global <new-name>"));
  EXPECT_EQ(without.refusal->rerun(), "");
}

TEST(JudgeProfileEdit, TighteningEditProceedsAndReportsAcksItMadeStale) {
  World w;
  w.bindings.Put({"agent:leash-iris", "web-research", {"network.allow:openai.com"}});
  w.profiles = Library({{"web-research", "network: {allow: [github.com, openai.com]}"}});
  ProfileEditJudgement j = JudgeProfileEdit(w.resolver(), "web-research",
                                            Fragment("network: {allow: [github.com]}"), {},
                                            "f.yaml");
  ASSERT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.gained, IsEmpty());
  EXPECT_THAT(j.notices, Contains(HasSubstr("'network.allow:openai.com' is stale")));
}

TEST(JudgeProfileEdit, ANewProfileWithNoBindingsIsJudgedAgainstNobody) {
  World w;
  ProfileEditJudgement j =
      JudgeProfileEdit(w.resolver(), "fresh", Fragment("fail_mode: open"), {}, "fresh.yaml");
  EXPECT_FALSE(j.refusal.has_value());
}

// --- unbind --------------------------------------------------------------------------------

TEST(JudgeUnbind, RemovingATighteningBindingIsALooseningJudgedAsUnsetDeny) {
  World w;
  w.bindings.Put({"agent:leash-iris", "strict", {}});
  w.profiles = Library({{"strict", "commands: {deny: [ssh, curl]}\ntools: {inspect: {pii: block}}"}});
  UnbindJudgement j = JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris",
                                  {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "loosening");
  EXPECT_THAT(Tokens(*j.refusal),
              ElementsAre("unset.deny:commands:curl", "tools.inspect.pii:log"));
  EXPECT_EQ(j.refusal->rerun(),
            "sudo leash unbind agent:leash-iris --ack 'unset.deny:commands:curl' --ack "
            "'tools.inspect.pii:log'");

  UnbindJudgement ok = JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris",
                                   {"leash-iris"},
                                   {"unset.deny:commands:curl", "tools.inspect.pii:log"});
  ASSERT_FALSE(ok.refusal.has_value());
  EXPECT_THAT(ok.acks, ElementsAre("unset.deny:commands:curl", "tools.inspect.pii:log"));
  EXPECT_EQ(ok.binding.profile, "strict");
}

TEST(JudgeUnbind, ARemovalThatOnlyTightensProceeds) {
  World w;
  w.bindings.Put({"agent:leash-iris", "open", {"fail_mode:open"}});
  w.profiles = Library({{"open", "fail_mode: open"}});
  UnbindJudgement j =
      JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris", {"leash-iris"}, {});
  EXPECT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.acks, IsEmpty());
}

TEST(JudgeUnbind, DanglingBindingRemovalNeedsFailClosedAck) {
  World w;
  w.bindings.Put({"agent:leash-iris", "deleted", {}});
  UnbindJudgement j =
      JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris", {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("fail_closed:deleted"));
  EXPECT_THAT(j.refusal->loosenings(0).message(), HasSubstr("profile 'deleted' is deleted"));
  UnbindJudgement ok = JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris",
                                   {"leash-iris"}, {"fail_closed:deleted"});
  EXPECT_FALSE(ok.refusal.has_value());
  EXPECT_THAT(ok.acks, ElementsAre("fail_closed:deleted"));
}

TEST(JudgeUnbind, UnbindRefusedWhenTheFloorIsUnreadable) {
  World w;
  w.bindings.Put({"agent:leash-iris", "strict", {}});
  UnbindJudgement j = JudgeUnbind(absl::NotFoundError("/etc/leash/leash.yaml does not exist"),
                                  w.bindings, w.profiles, "agent:leash-iris", {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "unjudgeable");
  EXPECT_THAT(j.refusal->message(), HasSubstr("the floor cannot be read"));
}

TEST(JudgeUnbind, UnbindRefusedWhenTheSubjectIsStillUnresolvableWithoutTheBinding) {
  World w;
  w.bindings.Put({"global", "deleted", {}});
  w.bindings.Put({"agent:leash-iris", "strict", {}});
  w.profiles = Library({{"strict", "commands: {deny: [ssh, curl]}"}});
  UnbindJudgement j =
      JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris", {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "unjudgeable");
  EXPECT_THAT(j.refusal->message(), HasSubstr("would still not resolve without it"));
}

TEST(JudgeUnbind, UnbindingAGlobalThatNarrowedTheFloorWidensItForEverySubject) {
  World w;
  w.bindings.Put({"global", "strict", {}});
  w.bindings.Put({"agent:leash-iris", "research", {}});
  w.profiles = Library({{"strict", "commands: {deny: [ssh, curl]}"},
                        {"research", "network: {allow: [github.com]}"}});
  UnbindJudgement j = JudgeUnbind(w.floor, w.bindings, w.profiles, "global",
                                  {"leash-iris", "leash-ops"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("unset.deny:commands:curl"));
  EXPECT_THAT(j.refusal->message(), HasSubstr("the floor for every subject on the host"));
  UnbindJudgement ok = JudgeUnbind(w.floor, w.bindings, w.profiles, "global",
                                   {"leash-iris", "leash-ops"}, {"unset.deny:commands:curl"});
  ASSERT_FALSE(ok.refusal.has_value());
  EXPECT_THAT(ok.notices,
              Contains("unbind global changes the floor for every subject on the host"));
}

TEST(JudgeUnbind, UnbindingAGlobalThatEmptiedAnAllowListReAllowsItsEntries) {
  World w;
  w.bindings.Put({"global", "no-github", {}});
  w.profiles = Library({{"no-github", "network: {allow: []}"}});
  UnbindJudgement j =
      JudgeUnbind(w.floor, w.bindings, w.profiles, "global", {"leash-iris"}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("network.allow:github.com"));
}

TEST(JudgeUnbind, NoSuchBindingRefused) {
  World w;
  UnbindJudgement j = JudgeUnbind(w.floor, w.bindings, w.profiles, "agent:leash-iris", {}, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "scope");
  EXPECT_THAT(j.refusal->message(), HasSubstr("no binding for agent:leash-iris"));
}

TEST(JudgeUnbind, ALegacyTeamBindingResolvesForNobodySoItsRemovalChangesNothing) {
  World w;
  w.bindings.Put({"team:red", "strict", {}});
  w.profiles = Library({{"strict", "commands: {deny: [curl]}"}});
  UnbindJudgement j = JudgeUnbind(w.floor, w.bindings, w.profiles, "team:red", {}, {});
  EXPECT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.notices, Contains(HasSubstr("resolves for nobody")));
}

// --- validate ------------------------------------------------------------------------------

const leash::v1::Finding* FindingFor(const std::vector<leash::v1::Finding>& findings,
                                     absl::string_view entry) {
  for (const leash::v1::Finding& f : findings) {
    if (f.entry() == entry) return &f;
  }
  return nullptr;
}

TEST(ValidateTiers, StaleAcksAreReported) {
  World w;
  w.bindings.Put({"agent:leash-iris", "research",
                  {"network.allow:openai.com", "network.allow:anthropic.com"}});
  w.profiles = Library({{"research", "network: {allow: [github.com, openai.com]}"}});
  std::vector<leash::v1::Finding> findings =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  const leash::v1::Finding* stale = FindingFor(findings, "network.allow:anthropic.com");
  ASSERT_NE(stale, nullptr);
  EXPECT_EQ(stale->severity(), leash::v1::SEVERITY_WARNING);
  EXPECT_EQ(stale->source(), "agent:leash-iris");
  EXPECT_THAT(stale->message(), HasSubstr("is stale"));
  EXPECT_THAT(stale->message(), HasSubstr("sudo leash bind agent:leash-iris research --ack "
                                          "'network.allow:openai.com'"));
  EXPECT_EQ(FindingFor(findings, "network.allow:openai.com"), nullptr);
}

// `leash validate`: an inbound acknowledgement whose profile no longer serves remote peers is
// stale, and one that is still needed is not.
TEST(ValidateTiers, AStaleInboundAckIsReported) {
  World w;
  w.bindings.Put({"agent:leash-iris", "lan", {"network.inbound:allow"}});
  w.profiles = Library({{"lan", "network: {inbound: drop}"}});
  const std::vector<leash::v1::Finding> findings =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  const leash::v1::Finding* stale = FindingFor(findings, "network.inbound:allow");
  ASSERT_NE(stale, nullptr);
  EXPECT_THAT(stale->message(), HasSubstr("is stale"));
  w.profiles = Library({{"lan", "network: {inbound: allow}"}});
  const std::vector<leash::v1::Finding> needed =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  EXPECT_EQ(FindingFor(needed, "network.inbound:allow"), nullptr);
}

// The floor allow-lists github.com in whitelist mode; a profile (acknowledged) only switches
// network to blacklist. Neither file alone has a blacklist with an allow list, but the agent's
// policy does: its allow list is never consulted, and validate fails on it.
TEST(ValidateTiers, ABlacklistWithAnAllowListFormedAcrossTiersIsAnError) {
  World w;
  w.bindings.Put({"agent:leash-iris", "open", {"network.mode:blacklist"}});
  w.profiles = Library({{"open", "network: {mode: blacklist}"}});
  ASSERT_TRUE(w.resolver().ResolveAgent("leash-iris").ok())
      << w.resolver().ResolveAgent("leash-iris").failure->message;
  std::vector<leash::v1::Finding> findings =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  const leash::v1::Finding* across = FindingFor(findings, "open");
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(across->severity(), leash::v1::SEVERITY_ERROR);
  EXPECT_EQ(across->source(), "agent:leash-iris");
  EXPECT_EQ(across->field(), "network.allow");
  EXPECT_THAT(across->message(),
              HasSubstr("as resolved for agent:leash-iris (the floor, the global binding, then "
                        "profile 'open'): network is in blacklist mode (default-allow), so its "
                        "allow list (1 entry) is never consulted"));
  EXPECT_TRUE(HasBlockingFinding(findings));
}

TEST(ValidateTiers, DeadScopesAndUnresolvableSubjectsAreReported) {
  World w;
  w.bindings.Put({"team:red", "p", {}});
  w.bindings.Put({"agent:leash-gone", "p", {}});
  w.bindings.Put({"agent:leash-iris", "deleted", {}});
  w.profiles = Library({{"p", "{}"}});
  std::vector<leash::v1::Finding> findings =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  const leash::v1::Finding* team = FindingFor(findings, "team:red");
  ASSERT_NE(team, nullptr);
  EXPECT_EQ(team->severity(), leash::v1::SEVERITY_ERROR);
  const leash::v1::Finding* gone = FindingFor(findings, "agent:leash-gone");
  ASSERT_NE(gone, nullptr);
  EXPECT_THAT(gone->message(), HasSubstr("resolves for nobody"));
  const leash::v1::Finding* dangling = FindingFor(findings, "deleted");
  ASSERT_NE(dangling, nullptr);
  EXPECT_EQ(dangling->severity(), leash::v1::SEVERITY_CRITICAL);
  EXPECT_EQ(dangling->field(), "dangling-profile");
}

// --- deny lists across the tiers ------------------------------------------------------------
//
// "A profile may tighten the floor freely" — adding a deny is never a loosening, at any tier;
// "the consent check is made against the floor file alone" for a bind and a profile edit; and
// an unbind, judged with and without the binding, reports a deny the binding's profile added
// "as the engine's own unset.deny".

constexpr char kForbiddenFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
filesystem: {mode: blacklist, deny: [/srv/secret]}
commands: {mode: blacklist, deny: [forbidden]}
tools: {mode: whitelist, allow: [read_file], deny: [rm_rf]}
)";

struct DenyBindRow {
  std::string name;
  // "global" or "agent:leash-iris".
  std::string scope;
  // A global binding already in place ("" for none).
  std::string existing_global;
  std::string fragment;
  std::vector<std::string> acks;
  // The acks the binding records (every one else is "not needed").
  std::vector<std::string> recorded;
};

// A failing row is named, not dumped as bytes.
void PrintTo(const DenyBindRow& row, std::ostream* os) { *os << row.name; }

class DenyOnlyBind : public ::testing::TestWithParam<DenyBindRow> {};

TEST_P(DenyOnlyBind, AddingADenyIsNeverALoosening) {
  const DenyBindRow& row = GetParam();
  World w;
  w.floor = Floor(kForbiddenFloor);
  if (!row.existing_global.empty()) {
    w.bindings.Put({"global", "base", {}});
    w.profiles = Library({{"base", row.existing_global}});
  }
  absl::StatusOr<Scope> scope = ParseScope(row.scope);
  ASSERT_TRUE(scope.ok()) << scope.status();
  BindJudgement j = JudgeBind(w.resolver(), *scope, "p", Fragment(row.fragment), row.acks);
  ASSERT_FALSE(j.refusal.has_value()) << RenderRefusal(*j.refusal);
  EXPECT_EQ(j.binding.acks, row.recorded);
  for (const std::string& ack : row.acks) {
    if (std::find(row.recorded.begin(), row.recorded.end(), ack) != row.recorded.end()) continue;
    EXPECT_THAT(j.notices, Contains(HasSubstr(absl::StrCat("--ack '", ack, "' is not needed"))));
  }
  // And the resolver agrees at run start: the subject resolves with every floor deny held.
  Bindings next = w.bindings;
  next.Put(j.binding);
  ProfileLibrary profiles = w.profiles;
  profiles.insert_or_assign("p", Fragment(row.fragment));
  const ResolvedSubject iris = Resolver(w.floor, next, profiles).Resolve("leash-iris");
  ASSERT_TRUE(iris.ok()) << iris.failure->message;
  EXPECT_THAT(iris.policy->commands().deny().entries(), Contains("forbidden"));
  EXPECT_THAT(iris.policy->network().deny().entries(), Contains("evil.com"));
  EXPECT_THAT(iris.policy->filesystem().deny().entries(), Contains("/srv/secret"));
  EXPECT_THAT(iris.policy->tools().deny().entries(), Contains("rm_rf"));
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, DenyOnlyBind,
    ::testing::Values(
        DenyBindRow{"AgentDenyOnlyProfileNeedsNoAck", "agent:leash-iris", "",
                    "commands: {deny: [okay]}", {}, {}},
        DenyBindRow{"GlobalDenyOnlyProfileNeedsNoAck", "global", "", "commands: {deny: [okay]}",
                    {}, {}},
        DenyBindRow{"AgentDenyOnEverySurfaceNeedsNoAck", "agent:leash-iris", "",
                    "network: {deny: [x.example]}\nfilesystem: {deny: [/root]}\n"
                    "commands: {deny: [okay]}\ntools: {deny: [shell]}",
                    {}, {}},
        DenyBindRow{"AnEmptyDenyListNeedsNoAck", "agent:leash-iris", "",
                    "network: {deny: []}\nfilesystem: {deny: []}\ncommands: {deny: []}\n"
                    "tools: {deny: []}",
                    {}, {}},
        DenyBindRow{"GlobalEmptyDenyListNeedsNoAck", "global", "", "commands: {deny: []}", {},
                    {}},
        // With acks: an unset.deny ack is consent to nothing, so it is not recorded.
        DenyBindRow{"AnUnsetDenyAckForADenyOnlyProfileIsNotRecorded", "agent:leash-iris", "",
                    "commands: {deny: [okay]}", {"unset.deny:commands:forbidden"}, {}},
        DenyBindRow{"GlobalUnsetDenyAckIsNotRecorded", "global", "", "commands: {deny: [okay]}",
                    {"unset.deny:commands:forbidden"}, {}},
        // Over a global binding that added its own deny, an agent's deny-only profile drops
        // neither the global's nor the floor's.
        DenyBindRow{"AgentDenyOnlyProfileOverAGlobalDenyNeedsNoAck", "agent:leash-iris",
                    "commands: {deny: [curl]}", "commands: {deny: [okay]}", {}, {}},
        // A deny beside a real loosening: only the loosening is asked for and recorded.
        DenyBindRow{"ADenyBesideALooseningRecordsOnlyTheLooseningsAck", "agent:leash-iris", "",
                    "network: {allow: [github.com, openai.com], deny: [x.example]}",
                    {"network.allow:openai.com"}, {"network.allow:openai.com"}}),
    [](const ::testing::TestParamInfo<DenyBindRow>& info) { return info.param.name; });

// The issue's floor tightening: `leash fs deny` on the floor while an agent's profile sets the
// filesystem deny list. The edited floor resolves the agent with both denies, and no consent
// token is asked for anywhere.
TEST(JudgeBind, TighteningTheFloorLeavesAnAgentWhoseProfileSetsThatListResolved) {
  World w;
  w.floor = Floor(kForbiddenFloor);
  w.bindings.Put({"agent:leash-iris", "p", {}});
  w.profiles = Library({{"p", "filesystem: {deny: [/root]}"}});
  ASSERT_TRUE(w.resolver().Resolve("leash-iris").ok());
  w.floor.mutable_filesystem()->mutable_deny()->add_entries("/srv/new-secret");
  const ResolvedSubject iris = w.resolver().Resolve("leash-iris");
  ASSERT_TRUE(iris.ok()) << iris.failure->message;
  EXPECT_THAT(iris.policy->filesystem().deny().entries(),
              ElementsAre("/srv/secret", "/srv/new-secret", "/root"));
  EXPECT_THAT(ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"}),
              Not(Contains(::testing::Property(&leash::v1::Finding::severity,
                                               leash::v1::SEVERITY_CRITICAL))));
}

// An edit that drops a deny the profile itself added is judged against the floor file, where
// that deny never was, so the floor check asks nothing; but every bound subject resolved before
// and after loses it, so the edit needs that subject's unset.deny (rule P12) — and the floor's
// own deny stays in force for every bound agent either way.
TEST(JudgeProfileEdit, AnEditThatDropsAProfileDenyNeedsConsentAndNeverDropsAFloorDeny) {
  World w;
  w.floor = Floor(kForbiddenFloor);
  w.bindings.Put({"agent:leash-iris", "p", {}});
  w.bindings.Put({"global", "g", {}});
  w.profiles = Library({{"p", "commands: {deny: [curl]}"}, {"g", "commands: {deny: [wget]}"}});
  for (const char* edit : {"commands: {deny: [okay]}", "commands: {deny: []}"}) {
    ProfileEditJudgement agent = JudgeProfileEdit(w.resolver(), "p", Fragment(edit), {}, "p.yaml");
    ASSERT_TRUE(agent.refusal.has_value()) << edit;
    EXPECT_THAT(Tokens(*agent.refusal),
                ElementsAre("agent:leash-iris=unset.deny:commands:curl"));
    ProfileEditJudgement acked = JudgeProfileEdit(
        w.resolver(), "p", Fragment(edit), {"agent:leash-iris=unset.deny:commands:curl"},
        "p.yaml");
    EXPECT_FALSE(acked.refusal.has_value()) << edit << ": " << RenderRefusal(*acked.refusal);
    EXPECT_THAT(acked.change_acks, ElementsAre("agent:leash-iris=unset.deny:commands:curl"));
    // Consent for the change itself is not the binding's: the binding is not touched.
    EXPECT_THAT(acked.gained, IsEmpty());
    // The global binding's subjects lose wget: consent a save never takes.
    ProfileEditJudgement global = JudgeProfileEdit(w.resolver(), "g", Fragment(edit), {}, "g.yaml");
    ASSERT_TRUE(global.refusal.has_value()) << edit;
    EXPECT_THAT(global.refusal->message(), HasSubstr("sudo leash bind global <new-name>"));
    ProfileLibrary after = w.profiles;
    after.insert_or_assign("p", Fragment(edit));
    after.insert_or_assign("g", Fragment(edit));
    const ResolvedSubject iris = Resolver(w.floor, w.bindings, after).Resolve("leash-iris");
    ASSERT_TRUE(iris.ok()) << iris.failure->message;
    EXPECT_THAT(iris.policy->commands().deny().entries(), Contains("forbidden")) << edit;
  }
}

struct DenyUnbindRow {
  std::string name;
  std::string global;  // "" for no global binding
  std::string agent;   // "" for no agent binding
  std::string unbind;  // the scope removed
  // The tokens the removal needs, in order ({} when it only tightens or changes nothing).
  std::vector<std::string> tokens;
};

// A failing row is named, not dumped as bytes.
void PrintTo(const DenyUnbindRow& row, std::ostream* os) { *os << row.name; }

class DenyUnbind : public ::testing::TestWithParam<DenyUnbindRow> {};

TEST_P(DenyUnbind, ADenyTheRemovalDropsIsJudgedAsUnsetDeny) {
  const DenyUnbindRow& row = GetParam();
  World w;
  w.floor = Floor(kForbiddenFloor);
  std::initializer_list<std::pair<std::string, std::string>> none = {};
  w.profiles = Library(none);
  if (!row.global.empty()) {
    w.bindings.Put({"global", "g", {}});
    w.profiles.emplace("g", Fragment(row.global));
  }
  if (!row.agent.empty()) {
    w.bindings.Put({"agent:leash-iris", "a", {}});
    w.profiles.emplace("a", Fragment(row.agent));
  }
  const std::vector<std::string> agents = {"leash-iris", "leash-ops"};
  // Without acks.
  UnbindJudgement refused = JudgeUnbind(w.floor, w.bindings, w.profiles, row.unbind, agents, {});
  if (row.tokens.empty()) {
    EXPECT_FALSE(refused.refusal.has_value()) << RenderRefusal(*refused.refusal);
    EXPECT_THAT(refused.acks, IsEmpty());
    return;
  }
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_EQ(refused.refusal->kind(), "loosening");
  EXPECT_EQ(Tokens(*refused.refusal), row.tokens);
  for (const leash::v1::Loosening& l : refused.refusal->loosenings()) {
    EXPECT_THAT(l.message(), HasSubstr("(unset.deny): it is no longer blocked"));
  }
  // With every ack: it proceeds and the ledger records exactly those.
  UnbindJudgement ok =
      JudgeUnbind(w.floor, w.bindings, w.profiles, row.unbind, agents, row.tokens);
  ASSERT_FALSE(ok.refusal.has_value()) << RenderRefusal(*ok.refusal);
  EXPECT_EQ(ok.acks, row.tokens);
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, DenyUnbind,
    ::testing::Values(
        DenyUnbindRow{"AgentProfilesAddedDenyIsUnsetDeny", "", "commands: {deny: [okay]}",
                      "agent:leash-iris", {"unset.deny:commands:okay"}},
        DenyUnbindRow{"EverySurfacesAddedDenyIsItsOwnUnsetDeny", "",
                      "network: {deny: [x.example]}\nfilesystem: {deny: [/root]}\n"
                      "commands: {deny: [okay]}\ntools: {deny: [shell]}",
                      "agent:leash-iris",
                      {"unset.deny:network:x.example", "unset.deny:filesystem:/root",
                       "unset.deny:commands:okay", "unset.deny:tools:shell"}},
        DenyUnbindRow{"GlobalProfilesAddedDenyIsUnsetDenyForEverySubject",
                      "commands: {deny: [okay]}", "", "global", {"unset.deny:commands:okay"}},
        // The floor still denies what the profile repeated: nothing is dropped.
        DenyUnbindRow{"ADenyTheFloorAlsoHoldsIsNotDropped", "",
                      "commands: {deny: [forbidden]}", "agent:leash-iris", {}},
        // The global binding still holds what the agent's profile repeated.
        DenyUnbindRow{"ADenyTheGlobalBindingAlsoHoldsIsNotDropped", "commands: {deny: [curl]}",
                      "commands: {deny: [curl, okay]}", "agent:leash-iris",
                      {"unset.deny:commands:okay"}},
        DenyUnbindRow{"AnEmptyDenyListDropsNothingOnRemoval", "", "commands: {deny: []}",
                      "agent:leash-iris", {}}),
    [](const ::testing::TestParamInfo<DenyUnbindRow>& info) { return info.param.name; });

// A binding that consented to dropping a floor deny (the only way a deny-only profile bound
// before denies added up) consents to nothing now: validate reports the ack stale, with the
// re-bind that drops it, and the subject keeps the floor's deny.
TEST(ValidateTiers, AnUnsetDenyAckForAFloorDenyIsStaleBecauseNoProfileDropsOne) {
  World w;
  w.floor = Floor(kForbiddenFloor);
  w.bindings.Put({"agent:leash-iris", "p", {"unset.deny:commands:forbidden"}});
  w.profiles = Library({{"p", "commands: {deny: [okay]}"}});
  const std::vector<leash::v1::Finding> findings =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  const leash::v1::Finding* stale = FindingFor(findings, "unset.deny:commands:forbidden");
  ASSERT_NE(stale, nullptr);
  EXPECT_EQ(stale->severity(), leash::v1::SEVERITY_WARNING);
  EXPECT_THAT(stale->message(), HasSubstr("is stale"));
  EXPECT_THAT(stale->message(), HasSubstr("sudo leash bind agent:leash-iris p"));
  const ResolvedSubject iris = w.resolver().Resolve("leash-iris");
  ASSERT_TRUE(iris.ok()) << iris.failure->message;
  EXPECT_THAT(iris.policy->commands().deny().entries(), ElementsAre("forbidden", "okay"));
}

// `leash validate` explains the rule when a profile lists a deny the floor already has.
TEST(ValidateTiers, AProfileDenyTheFloorAlreadyHasIsExplainedAsRedundant) {
  World w;
  w.floor = Floor(kForbiddenFloor);
  w.bindings.Put({"agent:leash-iris", "p", {}});
  w.profiles = Library({{"p", "commands: {deny: [forbidden, okay]}\nnetwork: {deny: []}"}});
  const std::vector<leash::v1::Finding> findings =
      ValidateTiers(w.floor, w.bindings, w.profiles, {"leash-iris"});
  const leash::v1::Finding* repeated = FindingFor(findings, "forbidden");
  ASSERT_NE(repeated, nullptr);
  EXPECT_EQ(repeated->severity(), leash::v1::SEVERITY_INFO);
  EXPECT_EQ(repeated->source(), "profile:p");
  EXPECT_EQ(repeated->field(), "commands.deny");
  EXPECT_EQ(repeated->message(),
            "'forbidden' is already in the floor's commands.deny, so listing it here changes "
            "nothing: a floor deny holds for every subject, because a profile's deny list is "
            "added to the floor's and never replaces it");
  EXPECT_EQ(FindingFor(findings, "okay"), nullptr);
  bool empty_explained = false;
  for (const leash::v1::Finding& f : findings) {
    empty_explained |= f.field() == "network.deny" && f.severity() == leash::v1::SEVERITY_INFO &&
                       absl::StrContains(f.message(), "an empty network.deny removes none of the "
                                                      "floor's 1 entry");
  }
  EXPECT_TRUE(empty_explained);
  EXPECT_FALSE(HasBlockingFinding(findings));
}

// "Writes and validate disagree": the judgement a write is refused by is validate's own. A
// profile that only switches the network to blacklist, bound over the floor's allow list, makes
// the resolved policy one validate calls an error: the bind is refused naming it.
TEST(RefuseNewErrors, WritesAndValidateAgree_ABindValidateWouldCallAnErrorIsRefused) {
  World world;
  world.profiles = Library({{"open-net", "network: {mode: blacklist}"}});
  const std::vector<std::string> agents = {"leash-iris"};
  const std::vector<leash::v1::Finding> before =
      ValidatePolicy(world.floor, world.bindings, world.profiles, agents, nullptr);
  Bindings after = world.bindings;
  after.Put(Binding{"agent:leash-iris", "open-net", {"network.mode:blacklist"}});
  const std::vector<leash::v1::Finding> judged =
      ValidatePolicy(world.floor, after, world.profiles, agents, nullptr);
  EXPECT_TRUE(HasBlockingFinding(judged));
  std::optional<leash::v1::Refusal> refusal =
      RefuseNewErrors("binding 'open-net' to agent:leash-iris", before, judged);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->kind(), "validate");
  ASSERT_EQ(refusal->findings_size(), 1);
  EXPECT_EQ(refusal->findings(0).field(), "network.allow");
  const std::string text = RenderRefusal(*refusal);
  EXPECT_THAT(text, HasSubstr("refused (validate): binding 'open-net' to agent:leash-iris would "
                              "leave a policy that `leash validate` reports 1 error in"));
  EXPECT_THAT(text, HasSubstr("  - error: agent:leash-iris network.allow: as resolved for "
                              "agent:leash-iris"));
  EXPECT_THAT(text, HasSubstr("never consulted"));
  // A write that adds no error is not refused, even over a policy that already has one.
  EXPECT_FALSE(RefuseNewErrors("anything", judged, judged).has_value());
}

}  // namespace
}  // namespace leash::engine
