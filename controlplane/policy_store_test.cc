// The policy stores against real files in a temp state folder, one test per sentence of rules
// P3 to P6 (docs/ARCHITECTURE.md) that the stores carry (write ordering, the lock, the ledger,
// refusals that write nothing).
#include "controlplane/policy_store.h"

#include <sys/stat.h>

#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "controlplane/testing/state_dir.h"
#include "engine/bindings_yaml.h"
#include "engine/tiers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::Contents;
using ::leash::controlplane::testing::Host;
using ::leash::controlplane::testing::TempStateDir;
using ::leash::controlplane::testing::WriteRaw;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kFloor[] = R"(
user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com], deny: [evil.com]}
commands: {mode: blacklist, deny: [ssh]}
)";

const std::vector<std::string> kAgents = {"leash-iris", "leash-ops", "leash-vader"};

class PolicyStoreTest : public ::testing::Test {
 protected:
  void TearDown() override { base::SetWriteFaultHookForTesting(nullptr); }

  BindingStore Store() { return BindingStore(BindingStore::Options{dir_.state()}); }

  WriteOutcome Save(BindingStore& store, const std::string& name, const std::string& yaml,
                    std::vector<std::string> acks = {}) {
    absl::StatusOr<WriteOutcome> outcome =
        store.SaveProfile({name, yaml, std::move(acks), "", "uid 0 (root)"}, host_);
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    return outcome.ok() ? *outcome : WriteOutcome();
  }

  WriteOutcome Bind(BindingStore& store, const std::string& scope, const std::string& profile,
                    std::vector<std::string> acks = {}) {
    absl::StatusOr<WriteOutcome> outcome = store.Bind(scope, profile, acks, host_);
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    return outcome.ok() ? *outcome : WriteOutcome();
  }

  WriteOutcome Unbind(BindingStore& store, const std::string& scope,
                      std::vector<std::string> acks = {}) {
    absl::StatusOr<WriteOutcome> outcome = store.Unbind(scope, acks, "uid 0 (root)", host_);
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    return outcome.ok() ? *outcome : WriteOutcome();
  }

  engine::Bindings OnDisk(const BindingStore& store) {
    absl::StatusOr<Snapshot> snapshot = store.ReadSnapshot();
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    return snapshot.ok() ? snapshot->bindings : engine::Bindings();
  }

  std::string BindingsFile() { return dir_.state() + "/bindings.yaml"; }
  std::string ProfileFile(const std::string& name) {
    return dir_.state() + "/profiles/" + name + ".yaml";
  }

  TempStateDir dir_;
  HostInputs host_ = Host(kFloor, kAgents);
};

constexpr char kNarrow[] = "network: {allow: [github.com]}\n";
constexpr char kWider[] = "network: {allow: [github.com, openai.com]}\n";

// --- profile save ---------------------------------------------------------------------------

TEST_F(PolicyStoreTest, SaveProfileWritesBindingsBeforeProfile) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research").written);

  std::vector<std::string> renamed;
  base::SetWriteFaultHookForTesting([&](absl::string_view step, const std::string& path) {
    if (step == "rename") renamed.push_back(path);
  });
  WriteOutcome outcome =
      Save(store, "web-research", kWider, {"agent:leash-iris=network.allow:openai.com"});
  ASSERT_TRUE(outcome.written) << (outcome.refusal ? outcome.refusal->message() : "");
  EXPECT_THAT(renamed, ElementsAre(BindingsFile(), ProfileFile("web-research")));
  EXPECT_THAT(OnDisk(store).Find("agent:leash-iris")->acks,
              ElementsAre("network.allow:openai.com"));
  EXPECT_EQ(Contents(ProfileFile("web-research")), kWider);
}

TEST_F(PolicyStoreTest, SaveProfileRefusedWhenItLoosensABoundSubjectBeyondItsAcks) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research").written);
  ASSERT_TRUE(Bind(store, "agent:leash-vader", "web-research").written);
  const std::string bindings_before = Contents(BindingsFile());

  WriteOutcome outcome =
      Save(store, "web-research", kWider, {"agent:leash-iris=network.allow:openai.com"});
  EXPECT_FALSE(outcome.written);
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "loosening");
  ASSERT_EQ(outcome.refusal->loosenings_size(), 1);
  EXPECT_EQ(outcome.refusal->loosenings(0).scope(), "agent:leash-vader");
  EXPECT_EQ(outcome.refusal->loosenings(0).ack_token(),
            "agent:leash-vader=network.allow:openai.com");
  // Nothing written: not the profile, and not iris's consent either.
  EXPECT_EQ(Contents(ProfileFile("web-research")), kNarrow);
  EXPECT_EQ(Contents(BindingsFile()), bindings_before);
}

TEST_F(PolicyStoreTest, SaveProfilePerAgentAckAppendsToThatAgentsBindingOnly) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research").written);
  ASSERT_TRUE(Bind(store, "agent:leash-vader", "web-research").written);
  ASSERT_TRUE(Save(store, "other", "{}\n").written);
  ASSERT_TRUE(Bind(store, "agent:leash-ops", "other").written);

  WriteOutcome outcome = Save(store, "web-research", kWider,
                              {"agent:leash-iris=network.allow:openai.com",
                               "agent:leash-vader=network.allow:openai.com"});
  ASSERT_TRUE(outcome.written);
  engine::Bindings bindings = OnDisk(store);
  EXPECT_THAT(bindings.Find("agent:leash-iris")->acks, ElementsAre("network.allow:openai.com"));
  EXPECT_THAT(bindings.Find("agent:leash-vader")->acks, ElementsAre("network.allow:openai.com"));
  EXPECT_THAT(bindings.Find("agent:leash-ops")->acks, IsEmpty());
}

TEST_F(PolicyStoreTest, SaveProfileFailedProfileWritePutsBindingsBack) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research").written);
  const std::string bindings_before = Contents(BindingsFile());

  // The profile's rename fails for real: its path is a non-empty folder.
  ASSERT_TRUE(base::RemoveFileDurably(ProfileFile("web-research")).ok());
  WriteRaw(ProfileFile("web-research") + "/blocker", "x");
  absl::StatusOr<WriteOutcome> outcome = store.SaveProfile(
      {"web-research", kWider, {"agent:leash-iris=network.allow:openai.com"}, "", ""}, host_);
  EXPECT_FALSE(outcome.ok());
  EXPECT_THAT(outcome.status().message(), HasSubstr("web-research.yaml"));
  EXPECT_EQ(Contents(BindingsFile()), bindings_before);
}

TEST_F(PolicyStoreTest, SaveProfileRefusesInertEntriesOnWrite) {
  BindingStore store = Store();
  WriteOutcome outcome = Save(store, "web", "network: {allow: ['https://openai.com']}\n");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "entry");
  ASSERT_EQ(outcome.refusal->inert_entries_size(), 1);
  EXPECT_EQ(outcome.refusal->inert_entries(0).entry(), "https://openai.com");
  EXPECT_EQ(Contents(ProfileFile("web")), "<absent>");
}

TEST_F(PolicyStoreTest, InertEntriesAcceptedAndReportedOnLoad) {
  BindingStore store = Store();
  WriteRaw(ProfileFile("legacy"), "network: {deny: ['http://evil.com']}\n");
  absl::StatusOr<Snapshot> snapshot = store.ReadSnapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_EQ(snapshot->profiles.count("legacy"), 1u);
  EXPECT_TRUE(snapshot->profiles.at("legacy").ok());
  ASSERT_EQ(snapshot->findings.size(), 1u);
  EXPECT_EQ(snapshot->findings[0].severity(), leash::v1::SEVERITY_CRITICAL);
  EXPECT_EQ(snapshot->findings[0].source(), "profile:legacy");
}

TEST_F(PolicyStoreTest, SaveProfileRefusesAFullConfigKeyAProfileMayNotSet) {
  BindingStore store = Store();
  WriteOutcome outcome = Save(store, "mine", "user: mallory\n");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "profile");
  EXPECT_THAT(outcome.refusal->message(), HasSubstr("cannot set the leashed user"));
}

TEST_F(PolicyStoreTest, AProfileCannotConsentOnItsOwnBehalf) {
  // "The acknowledgement lives on the binding and never in the profile".
  BindingStore store = Store();
  WriteOutcome outcome =
      Save(store, "web", "acks: ['network.allow:openai.com']\nnetwork: {allow: [openai.com]}\n");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "profile");
  EXPECT_THAT(outcome.refusal->message(), HasSubstr("unknown key 'acks'"));
}

struct NameCase {
  std::string test_name;
  std::string name;
  std::string why;
};

class ProfileNameTest : public PolicyStoreTest,
                        public ::testing::WithParamInterface<NameCase> {};

TEST_P(ProfileNameTest, RefusedAndNothingWritten) {
  BindingStore store = Store();
  WriteOutcome outcome = Save(store, GetParam().name, "{}\n");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "profile");
  EXPECT_THAT(outcome.refusal->message(), HasSubstr(GetParam().why));
  EXPECT_FALSE(outcome.written);
  EXPECT_EQ(Contents(dir_.state()), "<absent>");
}

INSTANTIATE_TEST_SUITE_P(
    Names, ProfileNameTest,
    ::testing::Values(NameCase{"PathSeparator", "a/b", "path separator"},
                      NameCase{"ParentFolder", "a/../../etc/passwd", "'..'"},
                      NameCase{"DotFile", ".hidden", "dot-file"},
                      NameCase{"Empty", "", "is empty"},
                      NameCase{"LeadingDash", "-rf", "starts with '-'"},
                      NameCase{"Space", "web research", "contains ' '"},
                      NameCase{"TooLong", std::string(65, 'a'), "longer than 64"}),
    [](const ::testing::TestParamInfo<NameCase>& info) { return info.param.test_name; });

TEST_F(PolicyStoreTest, TempFilesAndStrayFilesAreNotProfiles) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web", "{}\n").written);
  WriteRaw(ProfileFile("web") + ".tmp-abc123", "fail_mode: open\n");
  WriteRaw(dir_.state() + "/profiles/.hidden.yaml", "fail_mode: open\n");
  absl::StatusOr<std::vector<std::string>> names = store.profiles().List();
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ElementsAre("web"));
}

// --- bind -----------------------------------------------------------------------------------

TEST_F(PolicyStoreTest, BindRechecksUnderTheLockThatTheProfileItJudgedIsStillOnDisk) {
  BindingStore::Options options{dir_.state()};
  options.after_bind_judgement_for_testing = [&] {
    // Another writer loosens the profile between the judgement and the lock.
    WriteRaw(ProfileFile("web-research"), kWider);
  };
  BindingStore racing(options);
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);

  absl::StatusOr<WriteOutcome> outcome =
      racing.Bind("agent:leash-iris", "web-research", {}, host_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_TRUE(outcome->refusal.has_value());
  EXPECT_EQ(outcome->refusal->kind(), "changed");
  EXPECT_THAT(outcome->refusal->message(), HasSubstr("changed on disk while this bind was being "
                                                     "judged"));
  EXPECT_EQ(OnDisk(store).Find("agent:leash-iris"), nullptr);
}

TEST_F(PolicyStoreTest, BindRecordsTheAcksOnTheBinding) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kWider).written);
  WriteOutcome refused = Bind(store, "agent:leash-iris", "web-research");
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_EQ(refused.refusal->rerun(),
            "sudo leash bind agent:leash-iris web-research --ack 'network.allow:openai.com'");
  EXPECT_EQ(Contents(BindingsFile()), "<absent>");

  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research", {"network.allow:openai.com"})
                  .written);
  EXPECT_THAT(OnDisk(store).Find("agent:leash-iris")->acks,
              ElementsAre("network.allow:openai.com"));
  // The profile itself carries no consent.
  EXPECT_EQ(Contents(ProfileFile("web-research")), kWider);
}

TEST_F(PolicyStoreTest, BindGlobalSaysItChangesTheFloorForEverySubject) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "strict", "commands: {deny: [ssh, curl]}\n").written);
  WriteOutcome outcome = Bind(store, "global", "strict");
  ASSERT_TRUE(outcome.written);
  EXPECT_THAT(outcome.notices,
              Contains("bind global changes the floor for every subject on the host"));
  EXPECT_THAT(outcome.ToResponse().notices(),
              Contains("bind global changes the floor for every subject on the host"));
}

TEST_F(PolicyStoreTest, GlobalBindingJudgedAgainstUnfoldedFloor) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "wide-open", "fail_mode: open\nnetwork: {mode: blacklist}\n").written);
  WriteOutcome outcome = Bind(store, "global", "wide-open");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->loosenings_size(), 2);
  EXPECT_EQ(Contents(BindingsFile()), "<absent>");
}

TEST_F(PolicyStoreTest, BindRefusesADisplayNameNamingTheRealAccount) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  WriteOutcome outcome = Bind(store, "agent:Iris", "web-research");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "scope");
  EXPECT_THAT(outcome.refusal->message(), HasSubstr("leash-iris"));
  EXPECT_EQ(outcome.refusal->rerun(), "sudo leash bind agent:leash-iris web-research");
  EXPECT_EQ(Contents(BindingsFile()), "<absent>");
}

TEST_F(PolicyStoreTest, BindRefusesTeamScopes) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  WriteOutcome outcome = Bind(store, "team:red", "web-research");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_THAT(outcome.refusal->message(), HasSubstr("not a policy tier"));
}

TEST_F(PolicyStoreTest, BindRefusedWhenTheFloorIsUnreadable) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  HostInputs host;
  host.floor = absl::NotFoundError("/etc/leash/leash.yaml does not exist");
  host.agent_accounts = kAgents;
  absl::StatusOr<WriteOutcome> outcome = store.Bind("agent:leash-iris", "web-research", {}, host);
  ASSERT_TRUE(outcome.ok());
  ASSERT_TRUE(outcome->refusal.has_value());
  EXPECT_EQ(outcome->refusal->kind(), "unjudgeable");
}

TEST_F(PolicyStoreTest, BindOfAMissingProfileIsRefused) {
  BindingStore store = Store();
  WriteOutcome outcome = Bind(store, "agent:leash-iris", "nope");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "profile");
  EXPECT_THAT(outcome.refusal->message(), HasSubstr("no profile named 'nope'"));
}

// --- unbind ---------------------------------------------------------------------------------

TEST_F(PolicyStoreTest, UnbindWritesTheLedgerRecordBeforeRemovingTheBinding) {
  BindingStore::Options options{dir_.state()};
  options.now = [] { return absl::FromUnixSeconds(1795000000); };
  BindingStore store(options);
  ASSERT_TRUE(Save(store, "strict", "commands: {deny: [ssh, curl]}\n").written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "strict").written);

  std::vector<std::string> steps;
  base::SetWriteFaultHookForTesting([&](absl::string_view step, const std::string& path) {
    if (step == "fsync-append" || step == "rename") steps.push_back(absl::StrCat(step, " ", path));
  });
  WriteOutcome outcome = Unbind(store, "agent:leash-iris", {"unset.deny:commands:curl"});
  ASSERT_TRUE(outcome.written) << (outcome.refusal ? outcome.refusal->message() : "");
  EXPECT_THAT(steps, ElementsAre("fsync-append " + store.ledger().path(),
                                 "rename " + BindingsFile()));
  absl::StatusOr<LedgerContents> ledger = store.ledger().Read();
  ASSERT_TRUE(ledger.ok());
  ASSERT_EQ(ledger->records.size(), 1u);
  EXPECT_EQ(ledger->records[0],
            (UnbindRecord{absl::FromUnixSeconds(1795000000), "uid 0 (root)", "agent:leash-iris",
                          "strict", {"unset.deny:commands:curl"}}));
  EXPECT_EQ(OnDisk(store).Find("agent:leash-iris"), nullptr);
}

TEST_F(PolicyStoreTest, UnbindRefusedUntilEveryFindingIsAcknowledged) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "strict", "commands: {deny: [ssh, curl]}\nfail_mode: closed\n").written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "strict").written);
  WriteOutcome outcome = Unbind(store, "agent:leash-iris");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->rerun(),
            "sudo leash unbind agent:leash-iris --ack 'unset.deny:commands:curl'");
  EXPECT_NE(OnDisk(store).Find("agent:leash-iris"), nullptr);
  EXPECT_EQ(Contents(store.ledger().path()), "<absent>");
}

TEST_F(PolicyStoreTest, UnbindRefusedWhenLedgerUnwritable) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "open", "fail_mode: open\n").written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "open", {"fail_mode:open"}).written);
  const std::string bindings_before = Contents(BindingsFile());
  // The ledger cannot be opened for appending: its path is a folder.
  ASSERT_EQ(mkdir(store.ledger().path().c_str(), 0700), 0);

  WriteOutcome outcome = Unbind(store, "agent:leash-iris");
  EXPECT_FALSE(outcome.written);
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "ledger");
  EXPECT_THAT(outcome.refusal->message(), HasSubstr("the unbind did not happen"));
  EXPECT_EQ(Contents(BindingsFile()), bindings_before);
}

TEST_F(PolicyStoreTest, UnbindOfADanglingBindingNeedsFailClosed) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research").written);
  // Deleting a bound profile strands its binding: refused, then done deliberately.
  WriteOutcome refused_delete = *store.DeleteProfile("web-research", {}, host_);
  EXPECT_FALSE(refused_delete.written);
  ASSERT_TRUE(refused_delete.refusal.has_value());
  EXPECT_EQ(refused_delete.refusal->kind(), "dangling");
  EXPECT_EQ(refused_delete.refusal->loosenings(0).ack_token(), "dangling:agent:leash-iris");
  EXPECT_TRUE(store.profiles().Load("web-research").ok());
  WriteOutcome deleted =
      *store.DeleteProfile("web-research", {"dangling:agent:leash-iris"}, host_);
  ASSERT_TRUE(deleted.written);
  EXPECT_THAT(deleted.notices,
              Contains(AllOf(HasSubstr("agent:leash-iris is denied everything (fail-closed)"),
                             HasSubstr("--ack 'fail_closed:web-research'"))));

  // The subject now fails closed at resolution.
  absl::StatusOr<Snapshot> snapshot = store.ReadSnapshot();
  ASSERT_TRUE(snapshot.ok());
  engine::Resolver resolver(*host_.floor, snapshot->bindings, snapshot->profiles);
  EXPECT_EQ(resolver.Resolve("leash-iris").failure->kind,
            engine::ResolveFailure::Kind::kDanglingProfile);

  WriteOutcome refused = Unbind(store, "agent:leash-iris");
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_EQ(refused.refusal->loosenings(0).ack_token(), "fail_closed:web-research");
  ASSERT_TRUE(Unbind(store, "agent:leash-iris", {"fail_closed:web-research"}).written);
}

TEST_F(PolicyStoreTest, TornLastLedgerLineIsReportedNeverRewritten) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "open", "fail_mode: open\n").written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "open", {"fail_mode:open"}).written);
  const std::string torn = "{\"time\":\"2026-11-01T00:00:00Z\",\"who\":\"ro";
  WriteRaw(store.ledger().path(), torn);

  absl::StatusOr<std::vector<leash::v1::Finding>> before = store.Validate(host_);
  ASSERT_TRUE(before.ok());
  EXPECT_THAT(*before, Contains(::testing::Property(&leash::v1::Finding::message,
                                                    HasSubstr("torn last line"))));

  WriteOutcome outcome = Unbind(store, "agent:leash-iris");
  ASSERT_TRUE(outcome.written);
  EXPECT_THAT(outcome.notices, Contains(HasSubstr("ended in a torn line")));
  const std::string after = Contents(store.ledger().path());
  EXPECT_EQ(after.substr(0, torn.size()), torn);
  EXPECT_EQ(after[torn.size()], '\n');
  absl::StatusOr<LedgerContents> ledger = store.ledger().Read();
  ASSERT_TRUE(ledger.ok());
  EXPECT_EQ(ledger->records.size(), 1u);
  ASSERT_EQ(ledger->problems.size(), 1u);
  EXPECT_EQ(ledger->problems[0].line, 1u);
}

TEST_F(PolicyStoreTest, UnbindOfNoBindingIsRefused) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web", "{}\n").written);
  WriteOutcome outcome = Unbind(store, "agent:leash-iris");
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_EQ(outcome.refusal->kind(), "scope");
}

// "Writes and validate disagree": a profile save, a bind or an unbind that would leave a policy
// validate calls an error is refused (kind "validate") naming the finding, with nothing written.
TEST_F(PolicyStoreTest, WritesAndValidateAgree_ASaveOrBindValidateWouldCallAnErrorIsRefused) {
  BindingStore store = Store();
  WriteOutcome saved = Save(store, "bad", "tools: {mode: blacklist, allow: [search]}\n");
  ASSERT_TRUE(saved.refusal.has_value());
  EXPECT_EQ(saved.refusal->kind(), "validate");
  ASSERT_EQ(saved.refusal->findings_size(), 1);
  EXPECT_EQ(saved.refusal->findings(0).source(), "profile:bad");
  EXPECT_EQ(saved.refusal->findings(0).field(), "tools.allow");
  EXPECT_EQ(Contents(ProfileFile("bad")), "<absent>");

  // Blacklist alone is a valid profile; bound over the floor's allow list it is not.
  ASSERT_TRUE(Save(store, "open-net", "network: {mode: blacklist}\n").written);
  WriteOutcome bound = Bind(store, "agent:leash-iris", "open-net", {"network.mode:blacklist"});
  ASSERT_TRUE(bound.refusal.has_value());
  EXPECT_EQ(bound.refusal->kind(), "validate");
  EXPECT_THAT(bound.refusal->findings(0).message(), HasSubstr("as resolved for agent:leash-iris"));
  EXPECT_EQ(Contents(BindingsFile()), "<absent>");

  // With its own empty allow list it is judged valid, and binds.
  ASSERT_TRUE(Save(store, "open-net", "network: {mode: blacklist, allow: []}\n").written);
  EXPECT_TRUE(Bind(store, "agent:leash-iris", "open-net", {"network.mode:blacklist"}).written);
}

// --- reads ----------------------------------------------------------------------------------

TEST_F(PolicyStoreTest, SnapshotOfAnAbsentStateFolderIsEmptyAndCreatesNothing) {
  BindingStore store = Store();
  absl::StatusOr<Snapshot> snapshot = store.ReadSnapshot();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_TRUE(snapshot->bindings.entries().empty());
  EXPECT_TRUE(snapshot->profiles.empty());
  EXPECT_EQ(Contents(dir_.state()), "<absent>");
}

TEST_F(PolicyStoreTest, CorruptBindingsFileFailsTheSnapshotWholesale) {
  BindingStore store = Store();
  WriteRaw(BindingsFile(), "bindings: [\n");
  absl::StatusOr<Snapshot> snapshot = store.ReadSnapshot();
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(snapshot.status().message(), HasSubstr("bindings.yaml"));
}

TEST_F(PolicyStoreTest, ValidateReportsStaleAcks) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kWider).written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research", {"network.allow:openai.com"})
                  .written);
  // The edit that drops openai.com tightens, so it proceeds — and leaves the ack stale.
  WriteOutcome outcome = Save(store, "web-research", kNarrow);
  ASSERT_TRUE(outcome.written);
  EXPECT_THAT(outcome.notices, Contains(HasSubstr("is stale after this edit")));
  absl::StatusOr<std::vector<leash::v1::Finding>> findings = store.Validate(host_);
  ASSERT_TRUE(findings.ok());
  EXPECT_THAT(*findings, Contains(::testing::Property(&leash::v1::Finding::entry,
                                                      "network.allow:openai.com")));
}

TEST_F(PolicyStoreTest, ListsAndShowsProfilesWithWhatTheyAreBoundTo) {
  BindingStore store = Store();
  ASSERT_TRUE(Save(store, "web-research", kNarrow).written);
  ASSERT_TRUE(Save(store, "strict", "commands: {deny: [ssh, curl]}\n").written);
  ASSERT_TRUE(Bind(store, "agent:leash-iris", "web-research").written);
  ASSERT_TRUE(Bind(store, "global", "strict").written);
  absl::StatusOr<leash::v1::ListProfilesResponse> list = store.ListProfiles();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->profiles_size(), 2);
  EXPECT_EQ(list->profiles(0).name(), "strict");
  EXPECT_THAT(list->profiles(0).bound_to(), ElementsAre("global"));
  absl::StatusOr<leash::v1::ShowProfileResponse> show = store.ShowProfile("web-research");
  ASSERT_TRUE(show.ok());
  EXPECT_EQ(show->yaml(), kNarrow);
  EXPECT_THAT(show->bound_to(), ElementsAre("agent:leash-iris"));
  absl::StatusOr<leash::v1::ListBindingsResponse> bindings = store.ListBindings();
  ASSERT_TRUE(bindings.ok());
  EXPECT_EQ(bindings->bindings_size(), 2);
}

}  // namespace
}  // namespace leash::controlplane

namespace leash::controlplane {
namespace {

// Consent for every write (rule P12): a rebind and a profile re-save that drop a deny are
// refused like the unbind of it; with its --ack the consent is appended to the ledger (kind,
// who, what) before the change, and a write whose record cannot be written does not happen.
class ConsentLedgerTest : public ::testing::Test {
 protected:
  BindingStore Store() { return BindingStore(BindingStore::Options{dir_.state()}); }
  SaveProfileArgs Args(const std::string& name, const std::string& yaml,
                       std::vector<std::string> acks = {}) {
    return {name, yaml, std::move(acks), "", "uid 0 (root); claimed by the client: alice"};
  }
  // The store with `no-py` and `no-paste` saved and agent:leash-vader bound to no-py.
  BindingStore Bound() {
    BindingStore store = Store();
    EXPECT_TRUE(store.SaveProfile(Args("no-py", "commands: {deny: [python3]}\n"), host_)->written);
    EXPECT_TRUE(
        store.SaveProfile(Args("no-paste", "commands: {deny: [xclip]}\n"), host_)->written);
    EXPECT_TRUE(store.Bind("agent:leash-vader", "no-py", {}, host_, "root")->written);
    return store;
  }
  std::string BindingsFile() { return dir_.state() + "/bindings.yaml"; }

  TempStateDir dir_;
  HostInputs host_ = Host(R"(
user: fido
commands: {mode: blacklist, deny: [ssh]}
)",
                          {"leash-vader"});
};

TEST_F(ConsentLedgerTest, ARebindDroppingADenyIsRefusedThenRecordedBeforeItIsWritten) {
  BindingStore store = Bound();
  absl::StatusOr<WriteOutcome> refused = store.Bind("agent:leash-vader", "no-paste", {}, host_,
                                                    "uid 0 (root)");
  ASSERT_TRUE(refused.ok()) << refused.status();
  ASSERT_TRUE(refused->refusal.has_value());
  EXPECT_EQ(refused->refusal->kind(), "loosening");
  EXPECT_THAT(refused->refusal->message(),
              HasSubstr("replaces agent:leash-vader's binding to 'no-py'"));
  EXPECT_EQ(refused->refusal->rerun(),
            "sudo leash bind agent:leash-vader no-paste --ack 'unset.deny:commands:python3'");
  EXPECT_EQ(Contents(store.ledger().path()), "<absent>");

  absl::StatusOr<WriteOutcome> acked = store.Bind(
      "agent:leash-vader", "no-paste", {"unset.deny:commands:python3"}, host_, "uid 0 (root)");
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_TRUE(acked->written);
  absl::StatusOr<LedgerContents> ledger = store.ledger().Read();
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  ASSERT_EQ(ledger->records.size(), 1u);
  EXPECT_EQ(ledger->records[0].kind, "bind");
  EXPECT_EQ(ledger->records[0].who, "uid 0 (root)");
  EXPECT_EQ(ledger->records[0].scope, "agent:leash-vader");
  EXPECT_EQ(ledger->records[0].profile, "no-paste");
  EXPECT_THAT(ledger->records[0].acks, ElementsAre("unset.deny:commands:python3"));
  // The consent is the change's, not the binding's: the binding carries none.
  absl::StatusOr<Snapshot> snapshot = store.ReadSnapshot();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_THAT(snapshot->bindings.Find("agent:leash-vader")->acks, IsEmpty());
}

TEST_F(ConsentLedgerTest, ARebindWhoseRecordCannotBeWrittenDoesNotHappen) {
  BindingStore store = Bound();
  const std::string before = Contents(BindingsFile());
  // The ledger cannot be opened for appending: its path is a folder.
  ASSERT_EQ(mkdir(store.ledger().path().c_str(), 0700), 0);
  absl::StatusOr<WriteOutcome> outcome = store.Bind(
      "agent:leash-vader", "no-paste", {"unset.deny:commands:python3"}, host_, "uid 0 (root)");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->written);
  ASSERT_TRUE(outcome->refusal.has_value());
  EXPECT_EQ(outcome->refusal->kind(), "ledger");
  EXPECT_THAT(outcome->refusal->message(),
              HasSubstr("agent:leash-vader is still bound to 'no-py'"));
  EXPECT_EQ(Contents(BindingsFile()), before);
}

TEST_F(ConsentLedgerTest, AProfileResaveDroppingADenyIsRefusedThenRecordedBeforeItIsWritten) {
  BindingStore store = Bound();
  const std::string profile = dir_.state() + "/profiles/no-py.yaml";
  absl::StatusOr<WriteOutcome> refused =
      store.SaveProfile(Args("no-py", "commands: {deny: []}\n"), host_);
  ASSERT_TRUE(refused.ok()) << refused.status();
  ASSERT_TRUE(refused->refusal.has_value());
  EXPECT_EQ(refused->refusal->rerun(),
            "sudo leash profile save no-py --from no-py.yaml --ack "
            "'agent:leash-vader=unset.deny:commands:python3'");
  EXPECT_EQ(Contents(profile), "commands: {deny: [python3]}\n");
  EXPECT_EQ(Contents(store.ledger().path()), "<absent>");

  absl::StatusOr<WriteOutcome> acked = store.SaveProfile(
      Args("no-py", "commands: {deny: []}\n", {"agent:leash-vader=unset.deny:commands:python3"}),
      host_);
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_TRUE(acked->written);
  absl::StatusOr<LedgerContents> ledger = store.ledger().Read();
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  ASSERT_EQ(ledger->records.size(), 1u);
  EXPECT_EQ(ledger->records[0].kind, "profile-save");
  EXPECT_EQ(ledger->records[0].who, "uid 0 (root); claimed by the client: alice");
  EXPECT_EQ(ledger->records[0].profile, "no-py");
  EXPECT_THAT(ledger->records[0].acks,
              ElementsAre("agent:leash-vader=unset.deny:commands:python3"));
}

TEST_F(ConsentLedgerTest, AProfileResaveWhoseRecordCannotBeWrittenDoesNotHappen) {
  BindingStore store = Bound();
  const std::string profile = dir_.state() + "/profiles/no-py.yaml";
  ASSERT_EQ(mkdir(store.ledger().path().c_str(), 0700), 0);
  absl::StatusOr<WriteOutcome> outcome = store.SaveProfile(
      Args("no-py", "commands: {deny: []}\n", {"agent:leash-vader=unset.deny:commands:python3"}),
      host_);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(outcome->written);
  ASSERT_TRUE(outcome->refusal.has_value());
  EXPECT_EQ(outcome->refusal->kind(), "ledger");
  EXPECT_EQ(Contents(profile), "commands: {deny: [python3]}\n");
}

TEST_F(ConsentLedgerTest, AWriteThatOnlyTightensNeedsNoConsentAndWritesNoRecord) {
  BindingStore store = Bound();
  EXPECT_TRUE(store.SaveProfile(Args("strict", "commands: {deny: [python3, xclip]}\n"), host_)
                  ->written);
  EXPECT_TRUE(store.Bind("agent:leash-vader", "strict", {}, host_, "root")->written);
  EXPECT_TRUE(store.SaveProfile(Args("strict", "commands: {deny: [python3, xclip, gcc]}\n"),
                                host_)
                  ->written);
  EXPECT_EQ(Contents(store.ledger().path()), "<absent>");
}

}  // namespace
}  // namespace leash::controlplane
