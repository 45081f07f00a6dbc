// Overlay and per-subject resolution (floor < global < agent), one test per sentence of rules
// S3, P1 and P7 in docs/ARCHITECTURE.md.
#include "engine/tiers.h"

#include <algorithm>
#include <ostream>

#include "engine/config_defaults.h"
#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Fragment;
using ::leash::engine::testing::Library;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Entries(const leash::v1::EntryList& list) {
  return {list.entries().begin(), list.entries().end()};
}

std::vector<std::string> Tokens(const std::vector<FieldChange>& changes) {
  std::vector<std::string> out;
  for (const FieldChange& change : changes) out.push_back(change.ack_token);
  return out;
}

constexpr char kFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com, openai.com], deny: [evil.com]}
filesystem: {mode: blacklist, deny: [/etc/shadow]}
commands: {mode: blacklist, deny: [ssh]}
)";

TEST(Overlay, OnlyKeysTheFragmentSetsAreApplied) {
  leash::v1::Config out = Overlay(Floor(kFloor), Fragment("network: {allow: [github.com]}"));
  EXPECT_THAT(Entries(out.network().allow()), ElementsAre("github.com"));
  EXPECT_THAT(Entries(out.network().deny()), ElementsAre("evil.com"));
  EXPECT_EQ(out.network().mode(), leash::v1::MODE_WHITELIST);
  EXPECT_EQ(out.filesystem().mode(), leash::v1::MODE_BLACKLIST);
  EXPECT_EQ(out.fail_mode(), "closed");
}

TEST(Overlay, InboundIsTheWritingTiersOwnValue) {
  const leash::v1::Config allowed =
      Overlay(Floor(kFloor), Fragment("network: {inbound: allow}"));
  EXPECT_EQ(allowed.network().inbound(), leash::v1::INBOUND_MODE_ALLOW);
  EXPECT_EQ(Overlay(allowed, Fragment("network: {inbound: drop}")).network().inbound(),
            leash::v1::INBOUND_MODE_DROP);
  // A fragment that does not write it leaves it as it was.
  EXPECT_EQ(Overlay(allowed, Fragment("network: {allow: []}")).network().inbound(),
            leash::v1::INBOUND_MODE_ALLOW);
}

TEST(Overlay, DnsIsTheWritingTiersOwnValue) {
  const leash::v1::Config resolvers =
      Overlay(Floor(kFloor), Fragment("network: {dns: resolvers}"));
  EXPECT_EQ(resolvers.network().dns(), leash::v1::DNS_MODE_RESOLVERS);
  EXPECT_EQ(Overlay(resolvers, Fragment("network: {dns: filter}")).network().dns(),
            leash::v1::DNS_MODE_FILTER);
  EXPECT_EQ(Overlay(resolvers, Fragment("network: {allow: []}")).network().dns(),
            leash::v1::DNS_MODE_RESOLVERS);
}

TEST(Overlay, AProfileIsAFragmentSoItLeavesOtherSurfacesAlone) {
  // "binding it to narrow one agent's network would also hand it filesystem: whitelist" — only
  // if the profile carried a whole config. A fragment does not.
  leash::v1::Config out =
      WithDefaults(Overlay(Floor(kFloor), Fragment("network: {mode: whitelist}")));
  EXPECT_EQ(out.filesystem().mode(), leash::v1::MODE_BLACKLIST);
  EXPECT_EQ(out.commands().mode(), leash::v1::MODE_BLACKLIST);
}

// "A profile may tighten the floor freely": a deny list a fragment writes is added to the
// base's, so `deny: []` drops nothing and no loosening is performed.
TEST(Overlay, ADenyListIsAddedToTheBasesSoAnEmptyOneDropsNothing) {
  leash::v1::Config out = Overlay(Floor(kFloor), Fragment("commands: {deny: []}"));
  EXPECT_THAT(Entries(out.commands().deny()), ElementsAre("ssh"));
  EXPECT_TRUE(Loosenings(WithDefaults(Floor(kFloor)), WithDefaults(out)).empty());
  out = Overlay(Floor(kFloor), Fragment("commands: {deny: [curl, ssh, curl]}"));
  EXPECT_THAT(Entries(out.commands().deny()), ElementsAre("ssh", "curl"));
}

// An allow list stays the writing tier's own value: a fragment's allow list replaces the base's.
TEST(Overlay, AnAllowListIsTheWritingTiersOwnValue) {
  leash::v1::Config out = Overlay(Floor(kFloor), Fragment("network: {allow: [], deny: [x.io]}"));
  EXPECT_EQ(out.network().allow().entries_size(), 0);
  EXPECT_THAT(Entries(out.network().deny()), ElementsAre("evil.com", "x.io"));
}

TEST(Overlay, InspectionCategoriesReplaceOneByOne) {
  leash::v1::Config out = Overlay(WithDefaults(Floor(kFloor)),
                                  Fragment("tools: {inspect: {pii: block}}"));
  EXPECT_EQ(out.tools().inspect().at("pii"), leash::v1::INSPECT_ACTION_BLOCK);
  EXPECT_EQ(out.tools().inspect().at("secrets"), leash::v1::INSPECT_ACTION_BLOCK);
  EXPECT_EQ(out.tools().inspect().at("priv_esc"), leash::v1::INSPECT_ACTION_BLOCK);
}

TEST(Overlay, NeverTakesTheUserFromAFragment) {
  leash::v1::Config fragment;
  fragment.set_user("mallory");
  EXPECT_EQ(Overlay(Floor(kFloor), fragment).user(), "fido");
}

TEST(Resolve, GlobalBindingFoldedIntoTheFloorAndAgentOverlaidOnThat) {
  Bindings bindings(std::vector<Binding>{{"global", "strict", {}}, {"agent:leash-iris", "narrow", {}}});
  ProfileLibrary profiles = Library({{"strict", "network: {deny: [evil.com, tracker.io]}"},
                                     {"narrow", "network: {allow: [github.com]}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ResolvedSubject iris = resolver.Resolve("leash-iris");
  ASSERT_TRUE(iris.ok()) << iris.failure->message;
  EXPECT_THAT(Entries(iris.policy->network().deny()), ElementsAre("evil.com", "tracker.io"));
  EXPECT_THAT(Entries(iris.policy->network().allow()), ElementsAre("github.com"));
  EXPECT_THAT(iris.scopes, ElementsAre("global", "agent:leash-iris"));
  EXPECT_THAT(iris.profiles, ElementsAre("strict", "narrow"));
}

TEST(Resolve, ResolvedPolicyHasEveryFieldPresent) {
  Bindings bindings;
  ProfileLibrary profiles;
  ResolvedSubject subject = Resolver(Floor("user: fido"), bindings, profiles).Resolve("leash-a");
  ASSERT_TRUE(subject.ok());
  EXPECT_TRUE(subject.policy->has_fail_mode());
  EXPECT_TRUE(subject.policy->network().has_udp());
  EXPECT_EQ(subject.policy->network().inbound(), leash::v1::INBOUND_MODE_DROP);
  EXPECT_TRUE(subject.policy->tools().has_max_input_bytes());
  EXPECT_EQ(subject.policy->tools().inspect().size(), 3u);
}

TEST(Resolve, ConfiguredUserResolvesToTheFloorWithNoTierOfItsOwn) {
  // Even a binding written under its name by hand is not applied: it has no tier.
  Bindings bindings(std::vector<Binding>{{"agent:fido", "open", {"fail_mode:open"}}});
  ProfileLibrary profiles = Library({{"open", "fail_mode: open"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ResolvedSubject fido = resolver.Resolve("fido");
  ASSERT_TRUE(fido.ok());
  EXPECT_EQ(fido.policy->fail_mode(), "closed");
  EXPECT_TRUE(fido.scopes.empty());
}

TEST(Resolve, ConfiguredUserGetsTheGlobalFoldedFloor) {
  Bindings bindings(std::vector<Binding>{{"global", "strict", {}}});
  ProfileLibrary profiles = Library({{"strict", "commands: {deny: [ssh, curl]}"}});
  ResolvedSubject fido = Resolver(Floor(kFloor), bindings, profiles).ResolveConfiguredUser();
  ASSERT_TRUE(fido.ok());
  EXPECT_THAT(Entries(fido.policy->commands().deny()), ElementsAre("ssh", "curl"));
  EXPECT_THAT(fido.scopes, ElementsAre("global"));
}

TEST(Resolve, UnboundAgentResolvesToTheFoldedFloor) {
  Bindings bindings;
  ProfileLibrary profiles;
  ResolvedSubject subject = Resolver(Floor(kFloor), bindings, profiles).Resolve("leash-ops");
  ASSERT_TRUE(subject.ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*subject.policy,
                                                                 WithDefaults(Floor(kFloor))));
}

TEST(Resolve, DanglingProfileFailsThatSubjectOnly) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "deleted", {}}, {"agent:leash-ops", "narrow", {}}});
  ProfileLibrary profiles = Library({{"narrow", "network: {allow: [github.com]}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ResolvedSubject iris = resolver.Resolve("leash-iris");
  ASSERT_FALSE(iris.ok());
  EXPECT_EQ(iris.failure->kind, ResolveFailure::Kind::kDanglingProfile);
  EXPECT_EQ(iris.failure->scope, "agent:leash-iris");
  EXPECT_THAT(iris.failure->message, HasSubstr("'deleted', which does not exist"));
  EXPECT_THAT(iris.failure->message, HasSubstr("agent:leash-iris is denied everything"));
  EXPECT_THAT(iris.failure->message,
              HasSubstr("sudo leash unbind agent:leash-iris --ack 'fail_closed:deleted'"));
  EXPECT_TRUE(resolver.Resolve("leash-ops").ok());
  EXPECT_TRUE(resolver.Resolve("fido").ok());
}

TEST(Resolve, UnreadableProfileFailsThatSubjectOnly) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "broken", {}}});
  ProfileLibrary profiles;
  profiles.emplace("broken", absl::InvalidArgumentError("broken.yaml:1:1: not valid YAML"));
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ResolvedSubject iris = resolver.Resolve("leash-iris");
  ASSERT_FALSE(iris.ok());
  EXPECT_EQ(iris.failure->kind, ResolveFailure::Kind::kUnreadableProfile);
  EXPECT_THAT(iris.failure->message, HasSubstr("not valid YAML"));
  EXPECT_TRUE(resolver.Resolve("leash-ops").ok());
}

TEST(Resolve, UnacknowledgedLooseningFailsThatSubjectOnlyListingEveryFinding) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "wide", {"fail_mode:open"}}});
  ProfileLibrary profiles =
      Library({{"wide", "fail_mode: open\nnetwork: {allow: [github.com, anthropic.com], "
                        "deny: []}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ResolvedSubject iris = resolver.Resolve("leash-iris");
  ASSERT_FALSE(iris.ok());
  EXPECT_EQ(iris.failure->kind, ResolveFailure::Kind::kUnacknowledgedLoosening);
  // `deny: []` drops none of the floor's denies, so it asks for no unset.deny.
  EXPECT_THAT(Tokens(iris.failure->loosenings), ElementsAre("network.allow:anthropic.com"));
  EXPECT_THAT(iris.failure->message,
              HasSubstr("sudo leash bind agent:leash-iris wide --ack 'fail_mode:open' --ack "
                        "'network.allow:anthropic.com'"));
  EXPECT_TRUE(resolver.Resolve("leash-ops").ok());
}

TEST(Resolve, AcknowledgedLooseningResolves) {
  Bindings bindings(std::vector<Binding>{{"agent:leash-iris", "wide", {"fail_mode:open"}}});
  ProfileLibrary profiles = Library({{"wide", "fail_mode: open"}});
  ResolvedSubject iris = Resolver(Floor(kFloor), bindings, profiles).Resolve("leash-iris");
  ASSERT_TRUE(iris.ok());
  EXPECT_EQ(iris.policy->fail_mode(), "open");
}

TEST(Resolve, GlobalBindingJudgedAgainstUnfoldedFloor) {
  // "without a gate, folding {fail_mode: open, network.mode: blacklist} over a strict floor
  // takes the whole host to default-allow with zero loosenings reported."
  Bindings bindings(std::vector<Binding>{{"global", "wide-open", {}}});
  ProfileLibrary profiles =
      Library({{"wide-open", "fail_mode: open\nnetwork: {mode: blacklist}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ASSERT_TRUE(resolver.global_failure().has_value());
  EXPECT_EQ(resolver.folded(), nullptr);
  EXPECT_THAT(Tokens(resolver.global_failure()->loosenings),
              ElementsAre("fail_mode:open", "network.mode:blacklist"));
  for (const char* account : {"fido", "leash-iris", "leash-ops"}) {
    ResolvedSubject subject = resolver.Resolve(account);
    ASSERT_FALSE(subject.ok()) << account;
    EXPECT_EQ(subject.failure->scope, "global");
    EXPECT_THAT(subject.failure->message,
                HasSubstr("every subject on the host is denied everything"));
  }
}

TEST(Resolve, GlobalBindingWithItsAcksIsFolded) {
  Bindings bindings(std::vector<Binding>{{"global", "wide-open", {"fail_mode:open", "network.mode:blacklist"}}});
  ProfileLibrary profiles =
      Library({{"wide-open", "fail_mode: open\nnetwork: {mode: blacklist}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ASSERT_NE(resolver.folded(), nullptr);
  EXPECT_EQ(resolver.Resolve("leash-iris").policy->network().mode(), leash::v1::MODE_BLACKLIST);
}

TEST(Resolve, RunStartCatchesALooseningAgainstTheFoldedBaseWithTheSameToken) {
  // "a field it already tightened may loosen against that stricter folded base and not against
  // the floor file. That direction is caught by the resolver at run start, against the real
  // base, with the same token".
  Bindings bindings(std::vector<Binding>{{"global", "github-only", {}}, {"agent:leash-iris", "research", {}}});
  ProfileLibrary profiles =
      Library({{"github-only", "network: {allow: [github.com]}"},
               {"research", "network: {allow: [github.com, openai.com]}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  // Against the floor file, research loosens nothing (the floor allows openai.com)...
  EXPECT_TRUE(Loosenings(resolver.floor(),
                         Overlay(resolver.floor(), *profiles.at("research"))).empty());
  // ...but against the folded base it adds openai.com back.
  ResolvedSubject iris = resolver.Resolve("leash-iris");
  ASSERT_FALSE(iris.ok());
  EXPECT_THAT(Tokens(iris.failure->loosenings), ElementsAre("network.allow:openai.com"));
}

// --- deny lists across the tiers ------------------------------------------------------------
//
// "A profile may tighten the floor freely" and "a profile usually tightens — a stricter
// whitelist, an extra deny": a subject's deny list on every surface is the union of the floor's,
// the global binding's and its own profile's. A floor deny holds for every subject, whatever a
// tier writes and whatever its binding acknowledges; tightening the floor never leaves an agent
// whose profile sets that list unresolved.

constexpr char kDenyFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
filesystem: {mode: blacklist, deny: [/etc/shadow]}
commands: {mode: blacklist, deny: [/srv/bin/forbidden]}
tools: {mode: whitelist, allow: [read_file], deny: [rm_rf]}
)";

// kDenyFloor after `leash fs deny /srv/new-secret`.
constexpr char kTightenedFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
filesystem: {mode: blacklist, deny: [/etc/shadow, /srv/new-secret]}
commands: {mode: blacklist, deny: [/srv/bin/forbidden]}
tools: {mode: whitelist, allow: [read_file], deny: [rm_rf]}
)";

struct DenyUnionRow {
  std::string name;
  std::string floor;
  // Empty: no binding at that tier.
  std::string global;
  std::string agent;
  std::vector<std::string> global_acks;
  std::vector<std::string> agent_acks;
  // The agent's and the configured user's deny lists: network, filesystem, commands, tools.
  std::vector<std::vector<std::string>> agent_denies;
  std::vector<std::vector<std::string>> user_denies;
};

// A failing row is named, not dumped as bytes.
void PrintTo(const DenyUnionRow& row, std::ostream* os) { *os << row.name; }

class DenyUnionAcrossTiers : public ::testing::TestWithParam<DenyUnionRow> {};

std::vector<std::vector<std::string>> Denies(const leash::v1::Config& policy) {
  return {Entries(policy.network().deny()), Entries(policy.filesystem().deny()),
          Entries(policy.commands().deny()), Entries(policy.tools().deny())};
}

TEST_P(DenyUnionAcrossTiers, ASubjectsDenyListIsTheUnionOfEveryTiersAndNeedsNoConsent) {
  const DenyUnionRow& row = GetParam();
  std::vector<Binding> entries;
  ProfileLibrary profiles;
  if (!row.global.empty()) {
    entries.push_back({"global", "g", row.global_acks});
    profiles.emplace("g", Fragment(row.global));
  }
  if (!row.agent.empty()) {
    entries.push_back({"agent:leash-iris", "a", row.agent_acks});
    profiles.emplace("a", Fragment(row.agent));
  }
  const Bindings bindings(std::move(entries));
  const Resolver resolver(Floor(row.floor), bindings, profiles);
  ASSERT_FALSE(resolver.global_failure().has_value()) << resolver.global_failure()->message;
  const ResolvedSubject iris = resolver.Resolve("leash-iris");
  ASSERT_TRUE(iris.ok()) << iris.failure->message;
  EXPECT_EQ(Denies(*iris.policy), row.agent_denies);
  const ResolvedSubject fido = resolver.Resolve("fido");
  ASSERT_TRUE(fido.ok()) << fido.failure->message;
  EXPECT_EQ(Denies(*fido.policy), row.user_denies);
  // Removing a tier's binding never removes a floor deny.
  for (const std::vector<std::string>& floor_list : Denies(resolver.floor())) {
    for (const std::string& entry : floor_list) {
      bool held = false;
      for (const std::vector<std::string>& list : Denies(*iris.policy)) {
        held |= std::find(list.begin(), list.end(), entry) != list.end();
      }
      EXPECT_TRUE(held) << "floor deny '" << entry << "' lost for leash-iris";
    }
  }
}

const std::vector<std::string> kFloorNetwork = {"evil.com"};
const std::vector<std::string> kFloorFiles = {"/etc/shadow"};
const std::vector<std::string> kFloorCommands = {"/srv/bin/forbidden"};
const std::vector<std::string> kFloorTools = {"rm_rf"};
const std::vector<std::vector<std::string>> kFloorDenies = {kFloorNetwork, kFloorFiles,
                                                            kFloorCommands, kFloorTools};

INSTANTIATE_TEST_SUITE_P(
    Tiers, DenyUnionAcrossTiers,
    ::testing::Values(
        DenyUnionRow{"FloorAloneIsEverySubjectsDenyList", kDenyFloor, "", "", {}, {},
                     kFloorDenies, kFloorDenies},
        // The issue's case: refused as a loosening of 'forbidden', and once acked the agent
        // could run it.
        DenyUnionRow{"AnAgentProfileThatOnlyAddsADenyKeepsTheFloorsDeny",
                     kDenyFloor,
                     "",
                     "commands: {deny: [okay]}",
                     {},
                     {},
                     {kFloorNetwork, kFloorFiles, {"/srv/bin/forbidden", "okay"}, kFloorTools},
                     kFloorDenies},
        DenyUnionRow{"AGlobalDenyOnlyProfileAddsToTheFloorForEverySubject",
                     kDenyFloor,
                     "commands: {deny: [okay]}",
                     "",
                     {},
                     {},
                     {kFloorNetwork, kFloorFiles, {"/srv/bin/forbidden", "okay"}, kFloorTools},
                     {kFloorNetwork, kFloorFiles, {"/srv/bin/forbidden", "okay"}, kFloorTools}},
        DenyUnionRow{"FloorGlobalAndAgentDeniesAddUpOnEverySurface",
                     kDenyFloor,
                     "network: {deny: [tracker.io]}\ntools: {deny: [shell]}",
                     "network: {deny: [ads.io]}\nfilesystem: {deny: [/root]}\n"
                     "commands: {deny: [curl]}\ntools: {deny: [shell, fetch]}",
                     {},
                     {},
                     {{"evil.com", "tracker.io", "ads.io"},
                      {"/etc/shadow", "/root"},
                      {"/srv/bin/forbidden", "curl"},
                      {"rm_rf", "shell", "fetch"}},
                     {{"evil.com", "tracker.io"}, kFloorFiles, kFloorCommands, {"rm_rf", "shell"}}},
        DenyUnionRow{"AnEmptyDenyListAtEitherTierRemovesNothing",
                     kDenyFloor,
                     "network: {deny: []}\nfilesystem: {deny: []}",
                     "commands: {deny: []}\ntools: {deny: []}",
                     {},
                     {},
                     kFloorDenies,
                     kFloorDenies},
        // A binding's acks cannot consent a floor deny away: there is no tier value that drops
        // one, so an unset.deny ack (stale) changes nothing.
        DenyUnionRow{"AnUnsetDenyAckOnTheBindingDropsNoFloorDeny",
                     kDenyFloor,
                     "filesystem: {deny: []}",
                     "commands: {deny: [okay]}",
                     {"unset.deny:filesystem:/etc/shadow"},
                     {"unset.deny:commands:/srv/bin/forbidden"},
                     {kFloorNetwork, kFloorFiles, {"/srv/bin/forbidden", "okay"}, kFloorTools},
                     kFloorDenies},
        // "allow lists and scalar keys are the tier's own value when the tier writes them".
        DenyUnionRow{"AllowListsAndModesStayTheWritingTiersOwnWhileDeniesAddUp",
                     kDenyFloor,
                     "",
                     "network: {allow: [github.com, a.example], deny: [x.example]}\n"
                     "commands: {mode: whitelist, allow: [git], deny: [okay]}",
                     {},
                     {"network.allow:a.example"},
                     {{"evil.com", "x.example"},
                      kFloorFiles,
                      {"/srv/bin/forbidden", "okay"},
                      kFloorTools},
                     kFloorDenies},
        // A deny the profile repeats is held once.
        DenyUnionRow{"AProfileRepeatingAFloorDenyHoldsItOnce",
                     kDenyFloor,
                     "tools: {deny: [rm_rf, shell]}",
                     "tools: {deny: [shell, rm_rf, fetch]}",
                     {},
                     {},
                     {kFloorNetwork, kFloorFiles, kFloorCommands, {"rm_rf", "shell", "fetch"}},
                     {kFloorNetwork, kFloorFiles, kFloorCommands, {"rm_rf", "shell"}}},
        // Tightening the floor (leash fs deny ...) under an agent whose profile sets the same
        // list: the agent keeps resolving, with the new floor deny in force for it.
        DenyUnionRow{"TighteningTheFloorUnderAProfileThatSetsThatListLeavesTheAgentResolved",
                     kTightenedFloor,
                     "",
                     "filesystem: {deny: [/root]}",
                     {},
                     {},
                     {kFloorNetwork,
                      {"/etc/shadow", "/srv/new-secret", "/root"},
                      kFloorCommands,
                      kFloorTools},
                     {kFloorNetwork, {"/etc/shadow", "/srv/new-secret"}, kFloorCommands,
                      kFloorTools}},
        // An inert deny (a relative command path can never match) blocks nothing, and it drops
        // nothing either: the agent resolves with the floor's deny in force.
        DenyUnionRow{"AnInertDenyInAProfileDropsNoFloorDeny",
                     kDenyFloor,
                     "",
                     "commands: {deny: [bin/okay]}",
                     {},
                     {},
                     {kFloorNetwork, kFloorFiles, {"/srv/bin/forbidden", "bin/okay"}, kFloorTools},
                     kFloorDenies}),
    [](const ::testing::TestParamInfo<DenyUnionRow>& info) { return info.param.name; });

// The other half of the rule: "allow lists and scalar keys are the tier's own value when the
// tier writes them". Each tier's allow list replaces the one beneath it (wider or narrower), a
// mode or fail_mode is the writing tier's, and a tier that does not write a key leaves the one
// beneath it; a widening resolves only with its ack on the binding that performs it.

struct OwnValueRow {
  std::string name;
  // False when leash-iris must not resolve (an unacknowledged loosening).
  bool resolves;
  std::string global;  // "" for no global binding
  std::string agent;   // "" for no agent binding
  std::vector<std::string> global_acks;
  std::vector<std::string> agent_acks;
  std::vector<std::string> agent_network_allow;
  leash::v1::Mode agent_commands_mode = leash::v1::MODE_BLACKLIST;
  std::string agent_fail_mode = "closed";
  std::vector<std::string> user_network_allow;
};

void PrintTo(const OwnValueRow& row, std::ostream* os) { *os << row.name; }

class OwnValueAcrossTiers : public ::testing::TestWithParam<OwnValueRow> {};

TEST_P(OwnValueAcrossTiers, AllowListsAndScalarsAreTheWritingTiersOwnValue) {
  const OwnValueRow& row = GetParam();
  std::vector<Binding> entries;
  ProfileLibrary profiles;
  if (!row.global.empty()) {
    entries.push_back({"global", "g", row.global_acks});
    profiles.emplace("g", Fragment(row.global));
  }
  if (!row.agent.empty()) {
    entries.push_back({"agent:leash-iris", "a", row.agent_acks});
    profiles.emplace("a", Fragment(row.agent));
  }
  const leash::v1::Config floor = Floor(kDenyFloor);
  const Bindings bindings(std::move(entries));
  const Resolver resolver(floor, bindings, profiles);
  ASSERT_FALSE(resolver.global_failure().has_value()) << resolver.global_failure()->message;
  const ResolvedSubject fido = resolver.Resolve("fido");
  ASSERT_TRUE(fido.ok()) << fido.failure->message;
  EXPECT_EQ(Entries(fido.policy->network().allow()), row.user_network_allow);
  const ResolvedSubject iris = resolver.Resolve("leash-iris");
  if (!row.resolves) {
    ASSERT_FALSE(iris.ok()) << "resolved without the ack its loosening needs";
    EXPECT_EQ(iris.failure->kind, ResolveFailure::Kind::kUnacknowledgedLoosening);
    return;
  }
  ASSERT_TRUE(iris.ok()) << iris.failure->message;
  EXPECT_EQ(Entries(iris.policy->network().allow()), row.agent_network_allow);
  EXPECT_EQ(iris.policy->commands().mode(), row.agent_commands_mode);
  EXPECT_EQ(iris.policy->fail_mode(), row.agent_fail_mode);
  // Whatever the tiers wrote, the floor's denies hold.
  EXPECT_THAT(Entries(iris.policy->network().deny()), ::testing::Contains("evil.com"));
}

const std::vector<std::string> kFloorAllow = {"github.com"};

INSTANTIATE_TEST_SUITE_P(
    Tiers, OwnValueAcrossTiers,
    ::testing::Values(
        OwnValueRow{"FloorAloneIsEverySubjectsValue", true, "", "", {}, {}, kFloorAllow,
                    leash::v1::MODE_BLACKLIST, "closed", kFloorAllow},
        OwnValueRow{"AGlobalAllowListReplacesTheFloorsWithItsAck", true,
                    "network: {allow: [github.com, a.example]}", "",
                    {"network.allow:a.example"}, {}, {"github.com", "a.example"},
                    leash::v1::MODE_BLACKLIST, "closed", {"github.com", "a.example"}},
        OwnValueRow{"AnAgentsNarrowerAllowListReplacesTheGlobalsWithoutAnAck", true,
                    "network: {allow: [github.com, a.example]}", "network: {allow: [a.example]}",
                    {"network.allow:a.example"}, {}, {"a.example"}, leash::v1::MODE_BLACKLIST,
                    "closed", {"github.com", "a.example"}},
        OwnValueRow{"AnEmptyAllowListIsTheTiersOwnAndNeedsNoAck", true, "",
                    "network: {allow: []}", {}, {}, {}, leash::v1::MODE_BLACKLIST, "closed",
                    kFloorAllow},
        OwnValueRow{"AnAgentsWiderAllowListWithoutItsAckDoesNotResolve", false, "",
                    "network: {allow: [github.com, b.example]}", {}, {}, {},
                    leash::v1::MODE_BLACKLIST, "closed", kFloorAllow},
        OwnValueRow{"AnAgentsWiderAllowListWithItsAckIsItsOwn", true, "",
                    "network: {allow: [github.com, b.example]}", {},
                    {"network.allow:b.example"}, {"github.com", "b.example"},
                    leash::v1::MODE_BLACKLIST, "closed", kFloorAllow},
        OwnValueRow{"AModeTheAgentWritesIsItsOwn", true, "",
                    "commands: {mode: whitelist, allow: [/usr/bin/git]}", {}, {}, kFloorAllow,
                    leash::v1::MODE_WHITELIST, "closed", kFloorAllow},
        OwnValueRow{"FailModeOpenWithoutItsAckDoesNotResolve", false, "", "fail_mode: open", {}, {},
                    {}, leash::v1::MODE_BLACKLIST, "closed", kFloorAllow},
        OwnValueRow{"FailModeOpenWithItsAckIsTheAgentsOwnAndNotTheUsers", true, "",
                    "fail_mode: open", {}, {"fail_mode:open"}, kFloorAllow,
                    leash::v1::MODE_BLACKLIST, "open", kFloorAllow}),
    [](const ::testing::TestParamInfo<OwnValueRow>& info) { return info.param.name; });

}  // namespace
}  // namespace leash::engine
