// Rule L4 of docs/ARCHITECTURE.md: audit never lifts a deny written above it. Tested through the
// engine as the enforcers use it: a subject resolved from the floor, the global binding and
// its own profile; its policy compiled with what the resolver says is written above the tier
// that set each surface's audit (AuditAbove); and CompiledPolicy::UnderAudit judging an event
// with that policy and the one above, as leash-proxy, leash-fswatch and the tools service do.
#include <string>

#include "engine/compiled_policy.h"
#include "engine/decision_record.h"
#include "engine/testing/tiers_fixtures.h"
#include "engine/tiers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Library;
using ::testing::HasSubstr;

// A floor that denies something on every surface, with a whitelist on network and tools.
constexpr char kFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com, gist.github.com, pypi.org], deny: [gist.github.com]}
filesystem: {mode: blacklist, deny: [/home/agent/.env]}
commands: {mode: blacklist, deny: [/usr/bin/nc]}
tools: {mode: blacklist, deny: [shell]}
)";

// The agent's profile: every surface in audit, with a deny entry of its own on each.
constexpr char kObserve[] = R"(
network: {audit: true, deny: [pypi.org]}
filesystem: {audit: true, deny: [/srv/own]}
commands: {audit: true, deny: [/usr/bin/own]}
tools: {audit: true, deny: [own_tool]}
)";

const std::vector<std::string> kAllAudit = {"network.audit:true", "filesystem.audit:true",
                                            "commands.audit:true", "tools.audit:true"};

// The subject's policy as the sidecars compile it from SubjectPolicy (policy, audit_above).
CompiledPolicy Compiled(const ResolvedSubject& subject) {
  EXPECT_TRUE(subject.ok()) << (subject.failure ? subject.failure->message : "");
  if (!subject.ok()) return CompiledPolicy::Compile(leash::v1::Config());
  return CompiledPolicy::Compile(*subject.policy, {},
                                 subject.audit_above ? &*subject.audit_above : nullptr);
}

// Each surface's judgement under audit, the above's judged the same way.
Decision Network(const CompiledPolicy& policy, const std::string& domain) {
  NetworkSubject subject{domain, std::nullopt, 443};
  return policy.UnderAudit(leash::v1::SURFACE_NETWORK, policy.DecideNetwork(subject),
                           [&](const CompiledPolicy& above) {
                             return !above.DecideNetwork(subject).allowed();
                           });
}
Decision Dns(const CompiledPolicy& policy, const std::string& name) {
  return policy.UnderAudit(leash::v1::SURFACE_NETWORK, policy.DecideDnsName(name),
                           [&](const CompiledPolicy& above) {
                             return !above.DecideDnsName(name).allowed();
                           });
}
Decision File(const CompiledPolicy& policy, const std::string& path) {
  return policy.UnderAudit(leash::v1::SURFACE_FILESYSTEM, policy.DecidePath(path),
                           [&](const CompiledPolicy& above) {
                             return !above.DecidePath(path).allowed();
                           });
}
Decision Command(const CompiledPolicy& policy, const std::string& binary) {
  return policy.UnderAudit(leash::v1::SURFACE_COMMANDS, policy.DecideCommand(binary),
                           [&](const CompiledPolicy& above) {
                             return !above.DecideCommand(binary).allowed();
                           });
}
Decision Tool(const CompiledPolicy& policy, const std::string& name) {
  return policy.UnderAudit(leash::v1::SURFACE_TOOLS, policy.DecideTool(name),
                           [&](const CompiledPolicy& above) {
                             return !above.DecideTool(name).allowed();
                           });
}

// A block audit kept: enforced, and logged with enforced: true written out.
void ExpectKept(const Decision& decision, const std::string& what) {
  EXPECT_FALSE(decision.allowed()) << what;
  EXPECT_TRUE(decision.enforced) << what << " was lifted: " << decision.reason;
  EXPECT_TRUE(decision.kept_under_audit) << what;
  const leash::v1::DecisionRecord record = MakeDecisionRecord(
      absl::UnixEpoch(), "r", 1001, leash::v1::SURFACE_TOOLS, decision, leash::v1::Subject());
  EXPECT_TRUE(record.has_enforced() && record.enforced()) << what;
  EXPECT_THAT(DecisionLine(record), HasSubstr("\"enforced\":true")) << what;
}

// A block audit lifted: let through, logged with enforced: false.
void ExpectLifted(const Decision& decision, const std::string& what) {
  EXPECT_FALSE(decision.allowed()) << what;
  EXPECT_FALSE(decision.enforced) << what << " stayed enforced: " << decision.reason;
  EXPECT_TRUE(decision.permits()) << what;
  const leash::v1::DecisionRecord record = MakeDecisionRecord(
      absl::UnixEpoch(), "r", 1001, leash::v1::SURFACE_TOOLS, decision, leash::v1::Subject());
  EXPECT_THAT(DecisionLine(record), HasSubstr("\"enforced\":false")) << what;
}

TEST(AuditNeverLiftsADenyWrittenAboveIt, TheFloorsDenyEntriesStayEnforcedOnEverySurface) {
  Bindings bindings({{"agent:leash-iris", "observe", kAllAudit}});
  ProfileLibrary profiles = Library({{"observe", kObserve}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  const CompiledPolicy policy = Compiled(resolver.ResolveAgent("leash-iris"));

  ExpectKept(Network(policy, "gist.github.com"), "network: the floor's gist.github.com");
  ExpectKept(Dns(policy, "gist.github.com"), "DNS: the floor's gist.github.com");
  ExpectKept(File(policy, "/home/agent/.env"), "filesystem: the floor's .env");
  ExpectKept(Command(policy, "/usr/bin/nc"), "commands: the floor's nc");
  ExpectKept(Tool(policy, "shell"), "tools: the floor's shell");
}

TEST(AuditNeverLiftsADenyWrittenAboveIt, AuditCoversTheDenyEntriesOfItsOwnTier) {
  Bindings bindings({{"agent:leash-iris", "observe", kAllAudit}});
  ProfileLibrary profiles = Library({{"observe", kObserve}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  const CompiledPolicy policy = Compiled(resolver.ResolveAgent("leash-iris"));

  ExpectLifted(Network(policy, "pypi.org"), "network: the agent's own pypi.org");
  ExpectLifted(Dns(policy, "pypi.org"), "DNS: the agent's own pypi.org");
  ExpectLifted(File(policy, "/srv/own/x"), "filesystem: the agent's own /srv/own");
  ExpectLifted(Command(policy, "/usr/bin/own"), "commands: the agent's own");
  ExpectLifted(Tool(policy, "own_tool"), "tools: the agent's own");
}

// A whitelist's default-deny is no deny entry: audit lifts a miss of it, whichever tier wrote
// the whitelist (the floor's here; the agent's own below).
TEST(AuditNeverLiftsADenyWrittenAboveIt, AWhitelistMissIsAuditedWhicheverTierWroteTheWhitelist) {
  Bindings bindings({{"agent:leash-iris", "observe", kAllAudit},
                     {"agent:leash-juno", "own", {"network.audit:true"}}});
  ProfileLibrary profiles =
      Library({{"observe", kObserve},
               {"own", "network: {audit: true, allow: [github.com]}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  const CompiledPolicy floors = Compiled(resolver.ResolveAgent("leash-iris"));
  ExpectLifted(Network(floors, "example.org"), "a miss of the floor's whitelist");
  ExpectLifted(Dns(floors, "example.org"), "a DNS miss of the floor's whitelist");
  const CompiledPolicy own = Compiled(resolver.ResolveAgent("leash-juno"));
  ExpectLifted(Network(own, "pypi.org"), "a miss of the agent's own whitelist");
  // Its own whitelist does not drop the floor's deny.
  ExpectKept(Network(own, "gist.github.com"), "the floor's deny beside the agent's whitelist");
}

TEST(AuditNeverLiftsADenyWrittenAboveIt, UnderAGlobalAuditTheFloorsDeniesStayEnforced) {
  Bindings bindings({{"global", "observe", kAllAudit}});
  ProfileLibrary profiles = Library({{"observe", kObserve}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  for (const ResolvedSubject& subject :
       {resolver.ResolveConfiguredUser(), resolver.ResolveAgent("leash-unbound")}) {
    const CompiledPolicy policy = Compiled(subject);
    ExpectKept(File(policy, "/home/agent/.env"), subject.account + ": the floor's .env");
    ExpectKept(Network(policy, "gist.github.com"), subject.account + ": the floor's gist");
    ExpectKept(Tool(policy, "shell"), subject.account + ": the floor's shell");
    // The global binding's own denies are its own tier's: audited.
    ExpectLifted(File(policy, "/srv/own/x"), subject.account + ": the global's /srv/own");
    ExpectLifted(Command(policy, "/usr/bin/own"), subject.account + ": the global's own");
  }
}

TEST(AuditNeverLiftsADenyWrittenAboveIt, UnderAnAgentAuditTheGlobalBindingsDeniesStayEnforced) {
  Bindings bindings({{"global", "tight", {}}, {"agent:leash-iris", "observe", kAllAudit}});
  ProfileLibrary profiles = Library(
      {{"tight", "filesystem: {deny: [/srv/global]}\ntools: {deny: [global_tool]}"},
       {"observe", kObserve}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  const CompiledPolicy policy = Compiled(resolver.ResolveAgent("leash-iris"));
  ExpectKept(File(policy, "/srv/global/x"), "the global binding's /srv/global");
  ExpectKept(Tool(policy, "global_tool"), "the global binding's global_tool");
  ExpectKept(File(policy, "/home/agent/.env"), "the floor's .env");
  ExpectLifted(File(policy, "/srv/own/x"), "the agent's own /srv/own");
}

// The floor's own audit covers the floor's own decisions: nothing is written above it.
TEST(AuditNeverLiftsADenyWrittenAboveIt, AFloorInAuditLiftsItsOwnDenies) {
  leash::v1::Config config = Floor(kFloor);
  config.mutable_filesystem()->set_audit(true);
  Bindings bindings;
  ProfileLibrary profiles;
  Resolver resolver(config, bindings, profiles);
  const ResolvedSubject subject = resolver.ResolveAgent("leash-iris");
  EXPECT_FALSE(subject.audit_above.has_value());
  ExpectLifted(File(Compiled(subject), "/home/agent/.env"), "the floor's own .env");
}

// The tier whose `audit` is in force is the one that set it: a profile writing audit again
// over a global audit makes the global's denies "above" it.
TEST(AuditNeverLiftsADenyWrittenAboveIt, TheTierThatSetAuditIsTheLastToWriteIt) {
  Bindings bindings({{"global", "observe", kAllAudit},
                     {"agent:leash-iris", "again", {}},
                     {"agent:leash-juno", "quiet", {}}});
  ProfileLibrary profiles = Library({{"observe", kObserve},
                                     {"again", "filesystem: {audit: true}"},
                                     {"quiet", "filesystem: {audit: false}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  ExpectKept(File(Compiled(resolver.ResolveAgent("leash-iris")), "/srv/own/x"),
             "the global's /srv/own under the agent's own audit");
  // Audit turned off: a plain block, no enforced field.
  const Decision off = File(Compiled(resolver.ResolveAgent("leash-juno")), "/srv/own/x");
  EXPECT_TRUE(off.enforced);
  EXPECT_FALSE(off.kept_under_audit);
}

// What the sidecars are sent is what the resolver kept: the deny entries of the tiers above,
// as a blacklist, and only for the surfaces audited by a tier with a tier above it.
TEST(AuditNeverLiftsADenyWrittenAboveIt, WhatIsSentAboveAnAuditIsTheDenyEntriesAsABlacklist) {
  Bindings bindings({{"agent:leash-iris", "net", {"network.audit:true"}}});
  ProfileLibrary profiles = Library({{"net", "network: {audit: true}"}});
  Resolver resolver(Floor(kFloor), bindings, profiles);
  const ResolvedSubject subject = resolver.ResolveAgent("leash-iris");
  ASSERT_TRUE(subject.audit_above.has_value());
  EXPECT_TRUE(subject.audit_above->has_network());
  EXPECT_FALSE(subject.audit_above->has_filesystem());
  EXPECT_FALSE(subject.audit_above->has_tools());
  EXPECT_EQ(subject.audit_above->network().mode(), leash::v1::MODE_BLACKLIST);
  EXPECT_EQ(subject.audit_above->network().allow().entries_size(), 0);
  ASSERT_EQ(subject.audit_above->network().deny().entries_size(), 1);
  EXPECT_EQ(subject.audit_above->network().deny().entries(0), "gist.github.com");
  // A surface with nothing above its audit is not kept: the floor's filesystem is not audited.
  const CompiledPolicy policy = Compiled(subject);
  EXPECT_EQ(policy.audit_above(leash::v1::SURFACE_FILESYSTEM), nullptr);
  EXPECT_NE(policy.audit_above(leash::v1::SURFACE_NETWORK), nullptr);
}

}  // namespace
}  // namespace leash::engine
