// ControlService over real stores in a temp folder, a real SubjectDirectory, ReconcileLoop and
// PolicyStreamService, and the fake account database and netfilter: what each admin RPC answers
// and writes, without a socket, a namespace or root (the served socket is covered by
// test/leashd and test/cli).
#include "controlplane/control_service.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controlplane/testing/fake_accounts.h"
#include "controlplane/testing/fake_netfilter.h"
#include "controlplane/testing/state_dir.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::Contents;
using ::leash::controlplane::testing::FakeAccounts;
using ::leash::controlplane::testing::FakeNetfilter;
using ::leash::controlplane::testing::TempStateDir;
using ::testing::HasSubstr;

constexpr char kFloor[] = R"(user: fido
fail_mode: closed
network: {mode: whitelist, allow: [github.com]}
)";

SubjectState Subject(const std::string& account, uint32_t uid, bool with_policy) {
  SubjectState state;
  state.account = Account(account, uid, uid);
  state.port = static_cast<uint16_t>(18000 + uid % 1000);
  state.published.set_uid(uid);
  state.published.set_account(account);
  if (with_policy) {
    leash::v1::Config* policy = state.published.mutable_policy();
    policy->set_fail_mode("closed");
    policy->mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
    policy->mutable_network()->mutable_allow()->add_entries("github.com");
  } else {
    state.published.mutable_no_policy()->set_reason("profile 'gone' does not exist");
    state.problem = "profile 'gone' does not exist";
  }
  state.fingerprint = Fingerprint(state.published);
  return state;
}

class ControlServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(Config()) << kFloor;
    accounts_.Add("fido", 1000);
    accounts_.Add("leash-iris", 1001);
    accounts_.Add("leash-vader", 1002);
    loop_.Start();
  }
  void TearDown() override { loop_.Stop(); }

  std::string Config() const { return dir_.root() + "/leash.yaml"; }

  // A profile saved and a binding written with no reconcile pass after them: where a test
  // starts from.
  grpc::Status SaveUnreconciled(const std::string& name, const std::string& yaml,
                                leash::v1::PolicyWriteResponse* response) {
    leash::v1::SaveProfileRequest save;
    save.set_name(name);
    save.set_yaml(yaml);
    save.set_no_reconcile(true);
    return service_.SaveProfile(nullptr, &save, response);
  }
  grpc::Status BindUnreconciled(const std::string& scope, const std::string& profile,
                                leash::v1::PolicyWriteResponse* response) {
    leash::v1::BindRequest bind;
    bind.set_scope(scope);
    bind.set_profile(profile);
    bind.set_no_reconcile(true);
    return service_.Bind(nullptr, &bind, response);
  }

  ControlDeps Deps() {
    ControlDeps deps;
    deps.config_path = Config();
    // Its floor writes run as whoever runs the test: the fast tier needs no root.
    deps.floor_owner = geteuid();
    deps.store = &store_;
    deps.accounts = &accounts_;
    deps.subjects = &subjects_;
    deps.loop = &loop_;
    deps.stream = &stream_;
    deps.netfilter = &netfilter_;
    deps.netfilter_description = "nftables";
    return deps;
  }

  TempStateDir dir_;
  FakeAccounts accounts_;
  BindingStore store_{BindingStore::Options{dir_.state()}};
  SubjectDirectory subjects_;
  policystream::PolicyStreamService stream_;
  FakeNetfilter netfilter_;
  std::atomic<int> passes_{0};
  ReconcileLoop loop_{[this] {
                        leash::v1::ReconcileReport report;
                        report.set_unchanged(++passes_);
                        return report;
                      },
                      nullptr};
  ControlService service_{Deps()};
};

TEST_F(ControlServiceTest, StatusListsEachSubjectWithItsStateProfilesAndCounters) {
  SubjectState iris = Subject("leash-iris", 1001, true);
  iris.sources = {"profile:web-research"};
  iris.chain = NetfilterSubject{};
  iris.chain->uid = 1001;
  iris.account.subordinate_uids = {{100000, 165535}};
  SubjectState vader = Subject("leash-vader", 1002, false);
  SubjectState gone = Subject("leash-gone", 1003, false);
  gone.in_discovery = false;
  subjects_.Update({{1001, iris}, {1002, vader}, {1003, gone}});
  netfilter_.Seed(*iris.chain);
  NetfilterCounters counters;
  counters.inbound_dropped_packets = 7;
  netfilter_.SetCounters(1001, counters);
  ASSERT_EQ(loop_.RequestAndWait(absl::Seconds(10)).unchanged(), 1u);

  leash::v1::StatusResponse status;
  ASSERT_TRUE(service_.GetStatus(nullptr, nullptr, &status).ok());
  EXPECT_EQ(status.config_path(), Config());
  EXPECT_EQ(status.user(), "fido");
  EXPECT_EQ(status.floor().network().mode(), leash::v1::MODE_WHITELIST);
  EXPECT_EQ(status.netfilter(), "nftables");
  EXPECT_EQ(status.reconcile_passes(), 1u);
  EXPECT_EQ(status.last_reconcile().unchanged(), 1u);
  ASSERT_EQ(status.subjects_size(), 3);
  const leash::v1::SubjectStatus& first = status.subjects(0);
  EXPECT_EQ(first.account(), "leash-iris");
  EXPECT_EQ(first.state(), "enforced");
  EXPECT_EQ(first.port(), iris.port);
  EXPECT_EQ(first.profiles(0), "profile:web-research");
  EXPECT_EQ(first.policy().network().allow().entries(0), "github.com");
  EXPECT_EQ(first.counters().inbound_dropped_packets(), 7u);
  ASSERT_EQ(first.subordinate_uids_size(), 1);
  EXPECT_EQ(first.subordinate_uids(0).first(), 100000u);
  EXPECT_EQ(status.subjects(1).state(), "no-policy");
  EXPECT_EQ(status.subjects(1).detail(), "profile 'gone' does not exist");
  EXPECT_FALSE(status.subjects(1).has_counters()) << "no chain, no counters";
  EXPECT_EQ(status.subjects(2).state(), "left-discovery");
}

// Each subject's would-be blocks, per surface, from every enforcer's counts (the sidecars' from
// their heartbeats, none here, and the tools service's): summed per subject and surface, and
// set (as zeros) for a subject with none.
TEST_F(ControlServiceTest, StatusShowsEachSubjectsWouldBeBlocksPerSurface) {
  subjects_.Update({{1001, Subject("leash-iris", 1001, true)},
                    {1002, Subject("leash-vader", 1002, true)}});
  auto count = [](uint32_t uid, leash::v1::Surface surface, uint64_t n) {
    leash::v1::WouldBeBlocks out;
    out.set_uid(uid);
    out.set_surface(surface);
    out.set_count(n);
    return out;
  };
  ControlDeps deps = Deps();
  deps.tools_would_be_blocks = [&] {
    return std::vector<leash::v1::WouldBeBlocks>{
        count(1001, leash::v1::SURFACE_NETWORK, 2), count(1001, leash::v1::SURFACE_TOOLS, 3),
        count(1001, leash::v1::SURFACE_TOOLS, 1), count(1001, leash::v1::SURFACE_COMMANDS, 5),
        count(4242, leash::v1::SURFACE_FILESYSTEM, 9)};
  };
  ControlService service(deps);
  leash::v1::StatusResponse status;
  ASSERT_TRUE(service.GetStatus(nullptr, nullptr, &status).ok());
  ASSERT_EQ(status.subjects_size(), 2);
  const leash::v1::WouldBeBlockCounts& iris = status.subjects(0).would_be_blocks();
  EXPECT_EQ(iris.network(), 2u);
  EXPECT_EQ(iris.filesystem(), 0u);
  EXPECT_EQ(iris.commands(), 5u);
  EXPECT_EQ(iris.tools(), 4u);
  EXPECT_TRUE(status.subjects(1).has_would_be_blocks());
  EXPECT_EQ(status.subjects(1).would_be_blocks().ShortDebugString(), "");
}

// A chain whose counters cannot be read says so, rather than showing zeros.
TEST_F(ControlServiceTest, StatusSaysWhyCountersAreMissing) {
  SubjectState iris = Subject("leash-iris", 1001, true);
  iris.chain = NetfilterSubject{};
  iris.chain->uid = 1001;
  subjects_.Update({{1001, iris}});  // the chain is not in the (fake) kernel
  leash::v1::StatusResponse status;
  ASSERT_TRUE(service_.GetStatus(nullptr, nullptr, &status).ok());
  ASSERT_EQ(status.subjects_size(), 1);
  EXPECT_FALSE(status.subjects(0).has_counters());
  EXPECT_THAT(status.subjects(0).counters_error(), HasSubstr("1001"));
}

TEST_F(ControlServiceTest, StatusWithAnUnreadableFloorSaysWhyAndStillListsSubjects) {
  std::ofstream(Config()) << "user: [unclosed\n";
  subjects_.Update({{1001, Subject("leash-iris", 1001, true)}});
  leash::v1::StatusResponse status;
  ASSERT_TRUE(service_.GetStatus(nullptr, nullptr, &status).ok());
  EXPECT_THAT(status.floor_error(), HasSubstr(Config()));
  EXPECT_EQ(status.subjects_size(), 1);
}

TEST_F(ControlServiceTest, CheckJudgesByTheSubjectsPolicyInForce) {
  subjects_.Update({{1001, Subject("leash-iris", 1001, true)}});
  leash::v1::CheckRequest request;
  request.set_surface(leash::v1::SURFACE_NETWORK);
  request.set_account("leash-iris");
  leash::v1::CheckResponse response;
  request.set_subject("github.com:443");
  ASSERT_TRUE(service_.Check(nullptr, &request, &response).ok());
  EXPECT_EQ(response.account(), "leash-iris");
  EXPECT_EQ(response.evaluated_by(), "leashd");
  EXPECT_EQ(response.decision().action(), leash::v1::ACTION_ALLOW) << response.decision().reason();
  request.set_subject("evil.example:443");
  ASSERT_TRUE(service_.Check(nullptr, &request, &response).ok());
  EXPECT_EQ(response.decision().action(), leash::v1::ACTION_BLOCK);
}

TEST_F(ControlServiceTest, CheckOnASubjectWithNoPolicyBlocksAndSaysWhy) {
  subjects_.Update({{1002, Subject("leash-vader", 1002, false)}});
  leash::v1::CheckRequest request;
  request.set_surface(leash::v1::SURFACE_COMMANDS);
  request.set_account("leash-vader");
  request.set_subject("git");
  leash::v1::CheckResponse response;
  ASSERT_TRUE(service_.Check(nullptr, &request, &response).ok());
  EXPECT_EQ(response.decision().action(), leash::v1::ACTION_BLOCK);
  EXPECT_THAT(response.decision().reason(), HasSubstr("has no policy"));
  EXPECT_THAT(response.decision().reason(), HasSubstr("profile 'gone' does not exist"));
}

TEST_F(ControlServiceTest, CheckOnAnAccountLeashdDoesNotEnforceIsNotFoundNamingIt) {
  leash::v1::CheckRequest request;
  request.set_surface(leash::v1::SURFACE_NETWORK);
  request.set_subject("github.com:443");
  request.set_account("leash-nobody");
  leash::v1::CheckResponse response;
  grpc::Status status = service_.Check(nullptr, &request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("'leash-nobody'"));
  request.clear_account();
  status = service_.Check(nullptr, &request, &response);
  EXPECT_THAT(status.error_message(), HasSubstr("the configured user"));
}

// "The policy is on disk and not in force" is never reported as success: a write is followed by
// one reconcile whose report comes back; with no_reconcile, none runs.
TEST_F(ControlServiceTest, AWriteIsAnsweredWithTheReconcileThatFollowedIt) {
  leash::v1::PolicyWriteResponse saved;
  ASSERT_TRUE(SaveUnreconciled("web-research", "network: {allow: [github.com]}\n", &saved).ok());
  EXPECT_TRUE(saved.written());
  EXPECT_FALSE(saved.has_reconcile());
  EXPECT_EQ(loop_.passes(), 0u);

  leash::v1::BindRequest bind;
  bind.set_scope("agent:leash-iris");
  bind.set_profile("web-research");
  leash::v1::PolicyWriteResponse bound;
  ASSERT_TRUE(service_.Bind(nullptr, &bind, &bound).ok());
  EXPECT_TRUE(bound.written());
  EXPECT_EQ(bound.reconcile().unchanged(), 1u);
  EXPECT_EQ(loop_.passes(), 1u);
  EXPECT_THAT(Contents(store_.bindings_path()), HasSubstr("leash-iris"));

  leash::v1::ListBindingsResponse list;
  ASSERT_TRUE(service_.ListBindings(nullptr, nullptr, &list).ok());
  EXPECT_THAT(list.DebugString(), HasSubstr("web-research"));
}

// An unbind removes the binding, records in the ledger who asked (with no socket, only the
// client's claim), and is answered with the reconcile that followed it.
TEST_F(ControlServiceTest, AnUnbindRemovesTheBindingRecordsWhoAskedAndReconciles) {
  leash::v1::PolicyWriteResponse saved;
  ASSERT_TRUE(SaveUnreconciled("web-research", "network: {allow: [github.com]}\n", &saved).ok());
  leash::v1::PolicyWriteResponse bound;
  ASSERT_TRUE(BindUnreconciled("agent:leash-iris", "web-research", &bound).ok());
  ASSERT_TRUE(bound.written());
  ASSERT_THAT(Contents(store_.bindings_path()), HasSubstr("leash-iris"));

  leash::v1::UnbindRequest unbind;
  unbind.set_scope("agent:leash-iris");
  unbind.set_who("sudo from alice (SUDO_UID 1000)");
  leash::v1::PolicyWriteResponse unbound;
  ASSERT_TRUE(service_.Unbind(nullptr, &unbind, &unbound).ok());
  EXPECT_TRUE(unbound.written()) << unbound.DebugString();
  EXPECT_EQ(unbound.reconcile().unchanged(), 1u);
  EXPECT_EQ(loop_.passes(), 1u);
  EXPECT_THAT(Contents(store_.bindings_path()), ::testing::Not(HasSubstr("leash-iris")));
  const std::string ledger = Contents(dir_.state() + "/unbinds.jsonl");
  EXPECT_THAT(ledger, HasSubstr("agent:leash-iris"));
  EXPECT_THAT(ledger, HasSubstr("claimed by the client: sudo from alice (SUDO_UID 1000)"));
}

// A refused write writes nothing and runs no reconcile.
TEST_F(ControlServiceTest, ABindToAMissingProfileIsRefusedAndNothingRuns) {
  leash::v1::BindRequest bind;
  bind.set_scope("agent:leash-iris");
  bind.set_profile("no-such-profile");
  leash::v1::PolicyWriteResponse response;
  ASSERT_TRUE(service_.Bind(nullptr, &bind, &response).ok());
  EXPECT_FALSE(response.written());
  EXPECT_FALSE(response.refusal().kind().empty());
  EXPECT_FALSE(response.has_reconcile());
  EXPECT_EQ(Contents(store_.bindings_path()), "<absent>");
  EXPECT_EQ(loop_.passes(), 0u);
}

TEST_F(ControlServiceTest, FloorEditsNeedAListAndAnExistingConfiguredUser) {
  leash::v1::AddEntryRequest add;
  add.set_surface(leash::v1::SURFACE_NETWORK);
  add.set_entry("openai.com");
  leash::v1::PolicyWriteResponse response;
  EXPECT_EQ(service_.AddEntry(nullptr, &add, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  add.set_list(leash::v1::LIST_KIND_DENY);  // a tightening: judged only for the user
  accounts_.Remove("fido");
  grpc::Status status = service_.AddEntry(nullptr, &add, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("'fido' does not exist"));
  EXPECT_EQ(Contents(Config()), kFloor);
  EXPECT_EQ(loop_.passes(), 0u);
}

// `leash <surface> remove <entry>`: judged like every write, written in the operator's text.
constexpr char kCommentedFloor[] = R"(# the host's floor
user: fido
network:
  mode: whitelist   # default-deny
  allow:
    - github.com    # code
    - pypi.org      # packages
  deny: [evil.example, "bad.example"]  # never
)";

TEST_F(ControlServiceTest, RemoveEntryOfAnAllowTightensIsWrittenKeepingCommentsAndReconciles) {
  std::ofstream(Config()) << kCommentedFloor;
  accounts_.Add("fido", getegid());
  leash::v1::RemoveEntryRequest remove;
  remove.set_surface(leash::v1::SURFACE_NETWORK);
  remove.set_entry("pypi.org");
  leash::v1::PolicyWriteResponse response;
  {
    const grpc::Status status = service_.RemoveEntry(nullptr, &remove, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(response.written()) << response.DebugString();
  EXPECT_FALSE(response.has_refusal());
  EXPECT_TRUE(response.notices().empty()) << response.DebugString();
  EXPECT_EQ(response.reconcile().unchanged(), 1u);
  EXPECT_EQ(Contents(Config()),
            "# the host's floor\n"
            "user: fido\n"
            "network:\n"
            "  mode: whitelist   # default-deny\n"
            "  allow:\n"
            "    - github.com    # code\n"
            "  deny: [evil.example, \"bad.example\"]  # never\n");
}

TEST_F(ControlServiceTest, RemoveEntryOfADenyLoosensAndIsRefusedUntilItsAckIsGiven) {
  std::ofstream(Config()) << kCommentedFloor;
  accounts_.Add("fido", getegid());
  leash::v1::RemoveEntryRequest remove;
  remove.set_surface(leash::v1::SURFACE_NETWORK);
  remove.set_entry("evil.example");
  leash::v1::PolicyWriteResponse refused;
  ASSERT_TRUE(service_.RemoveEntry(nullptr, &remove, &refused).ok());
  EXPECT_FALSE(refused.written());
  EXPECT_EQ(refused.refusal().kind(), "loosening");
  ASSERT_EQ(refused.refusal().loosenings_size(), 1);
  EXPECT_EQ(refused.refusal().loosenings(0).ack_token(), "unset.deny:network:evil.example");
  EXPECT_EQ(refused.refusal().rerun(),
            "sudo leash network remove evil.example --ack 'unset.deny:network:evil.example'");
  EXPECT_EQ(Contents(Config()), kCommentedFloor);
  EXPECT_EQ(loop_.passes(), 0u);

  remove.add_acks("unset.deny:network:evil.example");
  leash::v1::PolicyWriteResponse written;
  {
    const grpc::Status status = service_.RemoveEntry(nullptr, &remove, &written);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(written.written()) << written.DebugString();
  EXPECT_THAT(Contents(Config()), HasSubstr("  deny: [\"bad.example\"]  # never\n"));
  EXPECT_EQ(loop_.passes(), 1u);
}

// A floor edit is judged as the floor before and after, whatever the verb: an allow added to a
// whitelist and a switch to blacklist widen every subject and need their token; the consent is
// on the ledger (kind floor-edit, who asked) before the floor is written.
TEST_F(ControlServiceTest, FloorAllowAndModeEditsThatLoosenNeedConsentRecordedFirst) {
  std::ofstream(Config()) << kCommentedFloor;
  accounts_.Add("fido", getegid());
  const std::string ledger = dir_.state() + "/unbinds.jsonl";
  leash::v1::AddEntryRequest add;
  add.set_surface(leash::v1::SURFACE_NETWORK);
  add.set_list(leash::v1::LIST_KIND_ALLOW);
  add.set_entry("gist.github.com");
  add.set_who("sudo from alice (SUDO_UID 1000)");
  leash::v1::PolicyWriteResponse refused;
  ASSERT_TRUE(service_.AddEntry(nullptr, &add, &refused).ok());
  EXPECT_FALSE(refused.written());
  EXPECT_EQ(refused.refusal().kind(), "loosening");
  ASSERT_EQ(refused.refusal().loosenings_size(), 1) << refused.DebugString();
  EXPECT_EQ(refused.refusal().loosenings(0).ack_token(), "network.allow:gist.github.com");
  EXPECT_EQ(refused.refusal().rerun(),
            "sudo leash network allow gist.github.com --ack 'network.allow:gist.github.com'");
  EXPECT_EQ(Contents(Config()), kCommentedFloor);
  EXPECT_EQ(Contents(ledger), "<absent>");

  // The ledger cannot be written (a folder in its place): nothing is written either.
  ASSERT_TRUE(std::filesystem::create_directories(ledger));
  add.add_acks("network.allow:gist.github.com");
  leash::v1::PolicyWriteResponse unrecorded;
  ASSERT_TRUE(service_.AddEntry(nullptr, &add, &unrecorded).ok());
  EXPECT_FALSE(unrecorded.written());
  EXPECT_EQ(unrecorded.refusal().kind(), "ledger") << unrecorded.DebugString();
  EXPECT_EQ(Contents(Config()), kCommentedFloor);
  std::filesystem::remove(ledger);

  leash::v1::PolicyWriteResponse written;
  ASSERT_TRUE(service_.AddEntry(nullptr, &add, &written).ok());
  EXPECT_TRUE(written.written()) << written.DebugString();
  EXPECT_THAT(Contents(Config()), HasSubstr("gist.github.com"));
  const std::string line = Contents(ledger);
  EXPECT_THAT(line, HasSubstr("\"kind\":\"floor-edit\""));
  EXPECT_THAT(line, HasSubstr("\"scope\":\"floor\""));
  EXPECT_THAT(line, HasSubstr("network.allow:gist.github.com"));
  EXPECT_THAT(line, HasSubstr("sudo from alice"));

  // A deny, or an allow on a blacklist, tightens or changes nothing: no consent, no record.
  leash::v1::AddEntryRequest deny;
  deny.set_surface(leash::v1::SURFACE_NETWORK);
  deny.set_list(leash::v1::LIST_KIND_DENY);
  deny.set_entry("worse.example");
  leash::v1::PolicyWriteResponse tightened;
  ASSERT_TRUE(service_.AddEntry(nullptr, &deny, &tightened).ok());
  EXPECT_TRUE(tightened.written()) << tightened.DebugString();
  EXPECT_EQ(Contents(ledger), line);

  leash::v1::SetModeRequest mode;
  mode.set_surface(leash::v1::SURFACE_COMMANDS);
  mode.set_mode(leash::v1::MODE_WHITELIST);
  leash::v1::PolicyWriteResponse whitelisted;
  ASSERT_TRUE(service_.SetMode(nullptr, &mode, &whitelisted).ok());
  EXPECT_TRUE(whitelisted.written()) << whitelisted.DebugString();
  mode.set_mode(leash::v1::MODE_BLACKLIST);
  leash::v1::PolicyWriteResponse loosened;
  ASSERT_TRUE(service_.SetMode(nullptr, &mode, &loosened).ok());
  EXPECT_FALSE(loosened.written());
  EXPECT_EQ(loosened.refusal().kind(), "loosening");
  EXPECT_EQ(loosened.refusal().rerun(),
            "sudo leash commands mode blacklist --ack 'commands.mode:blacklist'");
}

TEST_F(ControlServiceTest, RemoveEntryNotInTheFloorIsNotFoundNamingTheProfileThatWritesIt) {
  leash::v1::PolicyWriteResponse saved;
  ASSERT_TRUE(SaveUnreconciled("web", "network: {deny: [x.example]}\n", &saved).ok());
  ASSERT_TRUE(saved.written());
  leash::v1::RemoveEntryRequest remove;
  remove.set_surface(leash::v1::SURFACE_NETWORK);
  remove.set_entry("x.example");
  leash::v1::PolicyWriteResponse response;
  grpc::Status status = service_.RemoveEntry(nullptr, &remove, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("has no network.allow or deny entry 'x.example'"));
  EXPECT_THAT(status.error_message(),
              HasSubstr("profile 'web' (network.deny, " + dir_.state() + "/profiles/web.yaml)"));
  EXPECT_EQ(Contents(Config()), kFloor);
}

TEST_F(ControlServiceTest, ListEntriesShowsEachEntryWithItsTierFileAndBindings) {
  leash::v1::PolicyWriteResponse saved;
  ASSERT_TRUE(SaveUnreconciled("web", "network: {deny: [x.example]}\n", &saved).ok());
  ASSERT_TRUE(BindUnreconciled("agent:leash-iris", "web", &saved).ok());
  ASSERT_TRUE(saved.written()) << saved.DebugString();

  leash::v1::ListEntriesRequest request;
  request.set_surface(leash::v1::SURFACE_NETWORK);
  leash::v1::ListEntriesResponse list;
  ASSERT_TRUE(service_.ListEntries(nullptr, &request, &list).ok());
  ASSERT_EQ(list.entries_size(), 2) << list.DebugString();
  EXPECT_EQ(list.entries(0).list(), "allow");
  EXPECT_EQ(list.entries(0).entry(), "github.com");
  EXPECT_EQ(list.entries(0).source(), "floor");
  EXPECT_EQ(list.entries(0).file(), Config());
  EXPECT_EQ(list.entries(1).list(), "deny");
  EXPECT_EQ(list.entries(1).entry(), "x.example");
  EXPECT_EQ(list.entries(1).source(), "profile:web");
  EXPECT_EQ(list.entries(1).file(), dir_.state() + "/profiles/web.yaml");
  ASSERT_EQ(list.entries(1).bound_to_size(), 1);
  EXPECT_EQ(list.entries(1).bound_to(0), "agent:leash-iris");
  EXPECT_EQ(list.floor_modes().at("network"), "whitelist");
  EXPECT_EQ(list.floor_modes().size(), 1u);
}

// `leash profile delete` of a bound profile: refused like an unbind that loosens; with its acks
// it happens, and `leash bindings` marks the binding DANGLING.
TEST_F(ControlServiceTest, ProfileDeleteRefusedWhenBoundAndBindingsMarkDangling) {
  leash::v1::PolicyWriteResponse response;
  ASSERT_TRUE(SaveUnreconciled("web", "network: {deny: [x.example]}\n", &response).ok());
  ASSERT_TRUE(BindUnreconciled("agent:leash-iris", "web", &response).ok());
  const std::string profile = dir_.state() + "/profiles/web.yaml";

  leash::v1::DeleteProfileRequest del;
  del.set_name("web");
  leash::v1::PolicyWriteResponse refused;
  ASSERT_TRUE(service_.DeleteProfile(nullptr, &del, &refused).ok());
  EXPECT_FALSE(refused.written());
  EXPECT_EQ(refused.refusal().kind(), "dangling");
  EXPECT_THAT(refused.refusal().message(), HasSubstr("sudo leash unbind agent:leash-iris"));
  EXPECT_EQ(refused.refusal().rerun(),
            "sudo leash profile delete web --ack 'dangling:agent:leash-iris'");
  EXPECT_NE(Contents(profile), "<absent>");
  EXPECT_EQ(loop_.passes(), 0u);

  leash::v1::ListBindingsResponse list;
  ASSERT_TRUE(service_.ListBindings(nullptr, nullptr, &list).ok());
  ASSERT_EQ(list.bindings_size(), 1);
  EXPECT_FALSE(list.bindings(0).dangling());
  EXPECT_EQ(list.bindings(0).problem(), "");

  del.add_acks("dangling:agent:leash-iris");
  leash::v1::PolicyWriteResponse deleted;
  ASSERT_TRUE(service_.DeleteProfile(nullptr, &del, &deleted).ok());
  EXPECT_TRUE(deleted.written()) << deleted.DebugString();
  EXPECT_EQ(Contents(profile), "<absent>");
  // The consent to strand the binding went to the ledger first, then what the delete did.
  ASSERT_EQ(deleted.notices_size(), 2) << deleted.DebugString();
  EXPECT_THAT(deleted.notices(0), HasSubstr("consent recorded"));
  EXPECT_THAT(deleted.notices(1), HasSubstr("agent:leash-iris is denied everything"));
  const std::string ledger = Contents(dir_.state() + "/unbinds.jsonl");
  EXPECT_THAT(ledger, HasSubstr("\"kind\":\"profile-delete\""));
  EXPECT_THAT(ledger, HasSubstr("dangling:agent:leash-iris"));

  ASSERT_TRUE(service_.ListBindings(nullptr, nullptr, &list).ok());
  ASSERT_EQ(list.bindings_size(), 1);
  EXPECT_TRUE(list.bindings(0).dangling());
  EXPECT_THAT(list.bindings(0).problem(), HasSubstr("profile 'web' does not exist"));
  EXPECT_THAT(list.bindings(0).problem(),
              HasSubstr("sudo leash unbind agent:leash-iris --ack 'fail_closed:web'"));
}

// `leash validate` names an agent's subordinate IDs and the command that removes them.
// Rule N15's operator side: status lists the host's loopback resolvers as leashd found them
// (or why it could not), and validate names them in one host finding.
TEST_F(ControlServiceTest, StatusAndValidateNameTheHostsLoopbackResolvers) {
  ControlDeps deps = Deps();
  deps.loopback_resolvers = []() -> absl::StatusOr<std::vector<LoopbackResolver>> {
    return MergeLoopbackResolvers({*engine::ParseIpAddress("127.0.0.53")},
                                  {*engine::ParseIpAddress("127.0.0.54")},
                                  {*engine::ParseIpAddress("127.0.0.53"),
                                   *engine::ParseIpAddress("127.0.0.54")});
  };
  ControlService service(deps);
  leash::v1::StatusResponse status;
  ASSERT_TRUE(service.GetStatus(nullptr, nullptr, &status).ok());
  ASSERT_EQ(status.loopback_resolvers_size(), 2) << status.DebugString();
  EXPECT_EQ(status.loopback_resolvers(0).address(), "127.0.0.53");
  EXPECT_TRUE(status.loopback_resolvers(0).in_resolv_conf());
  EXPECT_FALSE(status.loopback_resolvers(0).udp());
  EXPECT_TRUE(status.loopback_resolvers(0).tcp());
  EXPECT_EQ(status.loopback_resolvers(1).address(), "127.0.0.54");
  EXPECT_FALSE(status.loopback_resolvers(1).in_resolv_conf());
  EXPECT_TRUE(status.loopback_resolvers(1).udp());
  leash::v1::ValidateResponse validate;
  ASSERT_TRUE(service.Validate(nullptr, nullptr, &validate).ok());
  bool found = false;
  for (const leash::v1::Finding& finding : validate.findings()) {
    if (finding.field() != "loopback resolvers") continue;
    found = true;
    EXPECT_EQ(finding.severity(), leash::v1::SEVERITY_INFO);
    EXPECT_THAT(finding.message(),
                HasSubstr("127.0.0.53 (resolv.conf; tcp), 127.0.0.54 (udp, tcp): an agent's DNS"));
  }
  EXPECT_TRUE(found) << validate.DebugString();

  deps.loopback_resolvers = []() -> absl::StatusOr<std::vector<LoopbackResolver>> {
    return absl::PermissionDeniedError("/proc/thread-self/net/udp: permission denied");
  };
  ControlService unreadable(deps);
  leash::v1::StatusResponse no_status;
  ASSERT_TRUE(unreadable.GetStatus(nullptr, nullptr, &no_status).ok());
  EXPECT_EQ(no_status.loopback_resolvers_size(), 0);
  EXPECT_THAT(no_status.loopback_resolvers_error(), HasSubstr("/proc/thread-self/net/udp"));
}

TEST_F(ControlServiceTest, ValidateWarnsOfAnAgentsSubordinateIdsWithTheFix) {
  SubjectState iris = Subject("leash-iris", 1001, true);
  iris.account.subordinate_uids = {{100000, 165535}};
  subjects_.Update({{1001, iris}});
  leash::v1::ValidateResponse response;
  ASSERT_TRUE(service_.Validate(nullptr, nullptr, &response).ok());
  EXPECT_EQ(response.evaluated_by(), "leashd");
  bool found = false;
  for (const leash::v1::Finding& finding : response.findings()) {
    if (finding.source() != "agent:leash-iris") continue;
    found = true;
    EXPECT_EQ(finding.severity(), leash::v1::SEVERITY_WARNING);
    EXPECT_THAT(finding.message(), HasSubstr("usermod --del-subuids 100000-165535 leash-iris"));
  }
  EXPECT_TRUE(found) << response.DebugString();
  EXPECT_FALSE(response.failed()) << response.DebugString();
}

// `leash validate` says what a line of /etc/subuid written in another form than useradd's was
// read as (newuidmap's reading), and that a line newuidmap ignores grants nothing.
TEST_F(ControlServiceTest, ValidateSaysHowAnAgentsSubordinateLinesWereRead) {
  SubjectState iris = Subject("leash-iris", 1001, true);
  iris.account.subordinate_uids = {{100000, 165535}};
  iris.account.subordinate_notes = {
      "line 2 of /etc/subuid written \"0x186a0:65536\", which newuidmap reads as 100000-165535",
      "line 3 of /etc/subuid names it, but its first or count is not a number strtoul reads "
      "whole: newuidmap ignores the line, it grants nothing"};
  subjects_.Update({{1001, iris}});
  leash::v1::ValidateResponse response;
  ASSERT_TRUE(service_.Validate(nullptr, nullptr, &response).ok());
  std::string said;
  for (const leash::v1::Finding& finding : response.findings()) {
    if (finding.source() == "agent:leash-iris" && finding.severity() == leash::v1::SEVERITY_INFO) {
      said += finding.message() + "\n";
    }
  }
  EXPECT_THAT(said, HasSubstr("leash-iris: line 2 of /etc/subuid written \"0x186a0:65536\""));
  EXPECT_THAT(said, HasSubstr("grants nothing"));
}

// "Writes and validate disagree": `net mode blacklist` over the floor's allow list, and an
// allow entry on a blacklist surface, are refused naming validate's finding; nothing is written
// and nothing runs.
TEST_F(ControlServiceTest, WritesAndValidateAgree_AFloorEditValidateWouldCallAnErrorIsRefused) {
  leash::v1::SetModeRequest mode;
  mode.set_surface(leash::v1::SURFACE_NETWORK);
  mode.set_mode(leash::v1::MODE_BLACKLIST);
  leash::v1::PolicyWriteResponse response;
  ASSERT_TRUE(service_.SetMode(nullptr, &mode, &response).ok());
  EXPECT_FALSE(response.written());
  // A loosening (network.mode:blacklist) judged completely: its re-run would meet validate's
  // error, so the refusal carries the finding and prints no line.
  EXPECT_EQ(response.refusal().kind(), "loosening");
  ASSERT_EQ(response.refusal().loosenings_size(), 1) << response.DebugString();
  EXPECT_EQ(response.refusal().loosenings(0).ack_token(), "network.mode:blacklist");
  ASSERT_EQ(response.refusal().findings_size(), 1) << response.DebugString();
  EXPECT_EQ(response.refusal().findings(0).field(), "network.allow");
  EXPECT_EQ(response.refusal().rerun(), "");
  EXPECT_EQ(Contents(Config()), kFloor);
  // With its consent, validate's refusal stands alone.
  mode.add_acks("network.mode:blacklist");
  ASSERT_TRUE(service_.SetMode(nullptr, &mode, &response).ok());
  EXPECT_FALSE(response.written());
  EXPECT_EQ(response.refusal().kind(), "validate");
  EXPECT_THAT(response.refusal().message(), HasSubstr("network mode blacklist would leave"));
  EXPECT_EQ(Contents(Config()), kFloor);

  std::ofstream(Config()) << "user: fido\ntools: {mode: blacklist, deny: [shell]}\n";
  leash::v1::AddEntryRequest add;
  add.set_surface(leash::v1::SURFACE_TOOLS);
  add.set_list(leash::v1::LIST_KIND_ALLOW);
  add.set_entry("search");
  {
    const grpc::Status status = service_.AddEntry(nullptr, &add, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_FALSE(response.written());
  EXPECT_EQ(response.refusal().kind(), "validate");
  EXPECT_EQ(response.refusal().findings(0).field(), "tools.allow");
  EXPECT_THAT(Contents(Config()), ::testing::Not(HasSubstr("search")));
  EXPECT_EQ(loop_.passes(), 0u);

  // What adds no error is written as before.
  add.set_list(leash::v1::LIST_KIND_DENY);
  {
    const grpc::Status status = service_.AddEntry(nullptr, &add, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(response.written()) << response.DebugString();
}

// Every finding's message, one a line.
std::string Messages(const leash::v1::ValidateResponse& response) {
  std::string out;
  for (const leash::v1::Finding& finding : response.findings()) {
    out += finding.message() + "\n";
  }
  return out;
}

TEST_F(ControlServiceTest, WritesAndValidateAgree_ValidateSaysWhatLeashdWillNotStartOn) {
  std::ofstream(Config()) << "network: {mode: whitelist}\n";
  leash::v1::ValidateResponse response;
  ASSERT_TRUE(service_.Validate(nullptr, nullptr, &response).ok());
  EXPECT_TRUE(response.failed()) << response.DebugString();
  EXPECT_THAT(Messages(response), HasSubstr("names no user"));

  std::ofstream(Config()) << kFloor;
  accounts_.Remove("fido");
  response.Clear();
  ASSERT_TRUE(service_.Validate(nullptr, nullptr, &response).ok());
  EXPECT_TRUE(response.failed()) << response.DebugString();
  EXPECT_THAT(Messages(response), HasSubstr("the leashed user 'fido' does not exist"));
}

TEST_F(ControlServiceTest, FailModeTyposCarryLineColumn) {
  std::ofstream(Config()) << "user: fido\nfail_mode: clsoed\n";
  leash::v1::ValidateResponse response;
  ASSERT_TRUE(service_.Validate(nullptr, nullptr, &response).ok());
  EXPECT_THAT(Messages(response),
              HasSubstr(Config() + ":2:12: fail_mode 'clsoed' is neither closed nor open"));
}

// The unbind ledger recorded "who: unknown (uid 0)". leashd records the credentials it sees on
// the socket as fact and the CLI's account of itself (sudo, login UID) as the client's claim.
// Each WatchDecisions call holds a server thread for as long as it runs: with the cap's worth
// of followers open, `leash status` still answers, the next follower is refused with the
// sentence naming the limit, and once one stops another may start.
TEST_F(ControlServiceTest, DecisionWatchersAreCappedAndStatusStillAnswers) {
  DecisionHub hub([](uint32_t) { return std::string("leash-iris"); });
  ControlDeps deps = Deps();
  deps.decisions.hub = &hub;
  deps.decisions.account_of = [](uint32_t) { return std::string("leash-iris"); };
  ControlService service(deps);
  // A socket path must fit in sun_path (108 bytes); the test's temp folder may not.
  char short_dir[] = "/tmp/leash-watchers-XXXXXX";
  ASSERT_NE(mkdtemp(short_dir), nullptr);
  const std::string socket_path = std::string(short_dir) + "/admin.sock";
  const std::string socket = "unix:" + socket_path;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<leash::v1::Control::Stub> stub =
      leash::v1::Control::NewStub(grpc::CreateChannel(socket, grpc::InsecureChannelCredentials()));
  leash::v1::WatchDecisionsRequest follow;
  follow.set_follow(true);

  struct Follower {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<leash::v1::WatchDecisionsEvent>> reader;
  };
  // Opens a follower; true once it is live (it holds its slot), false when refused.
  const auto open = [&](Follower& f, grpc::Status* refused) {
    f.reader = stub->WatchDecisions(&f.context, follow);
    leash::v1::WatchDecisionsEvent event;
    if (f.reader->Read(&event)) return event.live();
    *refused = f.reader->Finish();
    return false;
  };
  std::vector<std::unique_ptr<Follower>> followers;
  for (int i = 0; i < kMaxDecisionWatchers; ++i) {
    followers.push_back(std::make_unique<Follower>());
    grpc::Status refused;
    ASSERT_TRUE(open(*followers.back(), &refused)) << i << ": " << refused.error_message();
  }

  Follower one_more;
  grpc::Status refused;
  EXPECT_FALSE(open(one_more, &refused));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(), TooManyWatchers());
  EXPECT_THAT(refused.error_message(),
              HasSubstr(absl::StrCat(kMaxDecisionWatchers, " decision watchers")));

  grpc::ClientContext status_context;
  status_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  leash::v1::StatusResponse status;
  const grpc::Status answered = stub->GetStatus(&status_context, {}, &status);
  EXPECT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(status.config_path(), Config());

  // One follower stops: its slot comes back (the handler notices within its cancel check).
  followers[0]->context.TryCancel();
  followers[0]->reader->Finish();
  bool reopened = false;
  for (int attempt = 0; attempt < 50 && !reopened; ++attempt) {
    auto again = std::make_unique<Follower>();
    grpc::Status ignored;
    reopened = open(*again, &ignored);
    if (reopened) followers[0] = std::move(again);
    else absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(reopened);

  for (auto& f : followers) {
    f->context.TryCancel();
    f->reader->Finish();
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  unlink(socket_path.c_str());
  rmdir(short_dir);
}

TEST(UnbindLedgerWho, PeerCredentialsThenTheClientsClaim) {
  ucred root{};
  root.pid = 4242;
  root.uid = 0;
  root.gid = 0;
  EXPECT_EQ(DescribeUnbindCaller(root, "sudo from alice (SUDO_UID 1000); login uid 1000 (alice); uid 0"),
            "uid 0 (root), pid 4242; claimed by the client: sudo from alice (SUDO_UID 1000); "
            "login uid 1000 (alice); uid 0");
  EXPECT_EQ(DescribeUnbindCaller(root, ""), "uid 0 (root), pid 4242");
  EXPECT_EQ(DescribeUnbindCaller(std::nullopt, "uid 0"),
            "the caller's credentials could not be read; claimed by the client: uid 0");
}

}  // namespace
}  // namespace leash::controlplane
