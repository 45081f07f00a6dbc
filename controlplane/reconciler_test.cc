#include "controlplane/reconciler.h"

#include <sys/stat.h>

#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "proto/policystream/policy_subscriber.h"
#include "controlplane/testing/fake_accounts.h"
#include "controlplane/testing/fake_netfilter.h"
#include "engine/config_defaults.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using policystream::PolicySubscriber;
using policystream::SubjectMapPtr;

// Resolves each account to a fixed policy or error.
class FakePolicies : public PolicySource {
 public:
  void Set(const std::string& account, const std::string& allow) {
    leash::v1::Config c;
    c.mutable_network()->mutable_allow()->add_entries(allow);
    policies_[account] = engine::WithDefaults(c);
    errors_.erase(account);
  }
  void SetMaxToolInputBytes(const std::string& account, uint64_t bytes) {
    policies_[account].mutable_tools()->set_max_input_bytes(bytes);
  }
  void SetInbound(const std::string& account, leash::v1::InboundMode inbound) {
    policies_[account].mutable_network()->set_inbound(inbound);
  }
  void SetDns(const std::string& account, leash::v1::DnsMode dns) {
    policies_[account].mutable_network()->set_dns(dns);
  }
  void SetError(const std::string& account, const std::string& error) { errors_[account] = error; }
  void SetUnreadable(bool unreadable) { unreadable_ = unreadable; }
  leash::v1::Config floor;

  absl::StatusOr<std::unique_ptr<PolicySnapshot>> Load() override {
    if (unreadable_) return absl::UnavailableError("cannot read /etc/leash/leash.yaml: EACCES");
    return std::unique_ptr<PolicySnapshot>(new Snapshot(*this));
  }

 private:
  class Snapshot : public PolicySnapshot {
   public:
    explicit Snapshot(const FakePolicies& p) : p_(p) {}
    const leash::v1::Config& floor() const override { return p_.floor; }
    Resolution Resolve(const Account& a, bool) const override {
      Resolution out;
      if (auto e = p_.errors_.find(a.name); e != p_.errors_.end()) {
        out.policy = absl::FailedPreconditionError(e->second);
      } else if (auto it = p_.policies_.find(a.name); it != p_.policies_.end()) {
        out.policy = it->second;
      } else {
        out.policy = engine::WithDefaults(p_.floor);
      }
      return out;
    }

   private:
    const FakePolicies& p_;
  };
  std::map<std::string, leash::v1::Config> policies_;
  std::map<std::string, std::string> errors_;
  bool unreadable_ = false;
};

// A sidecar that acks every map; the "proxy" one can fail a UID's listener.
class FakeSidecar {
 public:
  FakeSidecar(const std::string& socket, leash::v1::SidecarKind kind) {
    policystream::SubscriberOptions options;
    options.socket_path = socket;
    options.kind = kind;
    subscriber_ = std::make_unique<policystream::PolicySubscriber>(
        options,
        [this](policystream::SubjectMapPtr map, uint64_t) {
          leash::v1::PolicyAck ack;
          absl::MutexLock lock(&mu_);
          map_ = map;
          for (uint32_t uid : unbindable_) {
            if (map->count(uid)) ack.add_failed_uids(uid);
          }
          ack.set_error(ack_error_);
          return ack;
        },
        nullptr);
    subscriber_->Start();
  }
  policystream::SubjectMapPtr map() {
    absl::MutexLock lock(&mu_);
    return map_;
  }
  void SetUnbindable(uint32_t uid) {
    absl::MutexLock lock(&mu_);
    unbindable_.insert(uid);
  }
  void ClearUnbindable() {
    absl::MutexLock lock(&mu_);
    unbindable_.clear();
  }
  // The error every later ack carries (the watcher's "filesystems not watched: ...").
  void SetAckError(const std::string& error) {
    absl::MutexLock lock(&mu_);
    ack_error_ = error;
  }

 private:
  absl::Mutex mu_;
  policystream::SubjectMapPtr map_;
  std::set<uint32_t> unbindable_;
  std::string ack_error_;
  std::unique_ptr<policystream::PolicySubscriber> subscriber_;
};

// The netfilter calls as "apply <uid>:<port>", "apply-all <uid> ...", "release <uid>".
std::vector<std::string> Calls(const testing::FakeNetfilter& netfilter) {
  std::vector<std::string> out;
  for (const auto& call : netfilter.calls()) {
    using Kind = testing::FakeNetfilter::Call::Kind;
    if (call.kind == Kind::kApply) {
      out.push_back("apply " + std::to_string(call.subjects[0].uid) + ":" +
                    std::to_string(call.subjects[0].port));
    } else if (call.kind == Kind::kApplyAll) {
      std::string line = "apply-all";
      for (const auto& s : call.subjects) line += " " + std::to_string(s.uid);
      out.push_back(line);
    } else if (call.kind == Kind::kRelease) {
      out.push_back("release " + std::to_string(call.uid));
    }
  }
  return out;
}

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *leash::testing::TempDir::Create("rec");
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + dir_->Join("s"), grpc::InsecureServerCredentials());
    builder.RegisterService(&stream_);
    server_ = builder.BuildAndStart();
    fswatch_ = std::make_unique<FakeSidecar>(dir_->Join("s"), leash::v1::SIDECAR_KIND_FSWATCH);
    proxy_ = std::make_unique<FakeSidecar>(dir_->Join("s"), leash::v1::SIDECAR_KIND_PROXY);
    ASSERT_TRUE(netfilter_.Prepare().ok());
    netfilter_.ClearCalls();
    accounts_.Add("fido", 1000);
    policies_.floor.set_user("fido");
    policies_.floor.set_fail_mode("closed");
  }
  void TearDown() override {
    fswatch_.reset();
    proxy_.reset();
    stream_.Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  std::unique_ptr<Reconciler> Make(bool single_subject = false,
                                   uint64_t tools_max_request_bytes = 0,
                                   absl::Duration ack_timeout = absl::Seconds(10)) {
    ReconcilerOptions options;
    options.ack_timeout = ack_timeout;
    options.tools_max_request_bytes = tools_max_request_bytes;
    options.configured_user = "fido";
    options.single_subject = single_subject;
    options.ports_path = dir_->Join("state/ports.json");
    options.resolv_conf_path = dir_->Join("resolv.conf");
    if (!command_search_path_.empty()) options.command_search_path = command_search_path_;
    options.exec_routes_root = dir_->path();  // no settings there: every route reads as open
    if (tweak_) tweak_(options);
    return std::make_unique<Reconciler>(options, &accounts_, &policies_, &netfilter_, &stream_);
  }
  const SubjectState& Subject(const Reconciler& r, uint32_t uid) { return r.subjects().at(uid); }

  std::unique_ptr<leash::testing::TempDir> dir_;
  std::vector<std::string> command_search_path_;
  std::function<void(ReconcilerOptions&)> tweak_;
  policystream::PolicyStreamService stream_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<FakeSidecar> fswatch_;
  std::unique_ptr<FakeSidecar> proxy_;
  testing::FakeAccounts accounts_;
  FakePolicies policies_;
  testing::FakeNetfilter netfilter_;
};

TEST_F(ReconcilerTest, DiscoversTwoAgentsEachResolvedSeparately) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  policies_.Set("leash-iris", "openai.com");
  policies_.Set("leash-vader", "github.com");
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_TRUE(report.error().empty()) << report.error();
  ASSERT_EQ(r->subjects().size(), 3u);  // fido stays a subject
  policystream::SubjectMapPtr map = fswatch_->map();
  ASSERT_NE(map, nullptr);
  EXPECT_TRUE(map->at(1001).policy->DecideNetwork({"openai.com", std::nullopt, 443}).allowed());
  EXPECT_FALSE(map->at(1001).policy->DecideNetwork({"github.com", std::nullopt, 443}).allowed());
  EXPECT_TRUE(map->at(1002).policy->DecideNetwork({"github.com", std::nullopt, 443}).allowed());
  // Ports from the port map, one per account (sorted by name: fido, iris, vader).
  EXPECT_EQ(Subject(*r, 1000).port, 18000);
  EXPECT_EQ(Subject(*r, 1001).port, 18001);
  EXPECT_EQ(Subject(*r, 1002).port, 18002);
  EXPECT_THAT(Calls(netfilter_), ElementsAre("apply-all 1000 1001 1002"));
}

// A subject that cannot get a proxy port (every one held by another process) still gets a
// chain: the refuse-all one (port 0, TCP refused, no UDP or DNS let through), denied with who
// holds the ports said; every pass asks for the ports again, and the first one after they free
// gives it a port, its policy and the normal chain.
TEST_F(ReconcilerTest, APortlessSubjectGetsTheRefuseAllChainAndAPortOnceOneFrees) {
  accounts_.Add("leash-iris", 1001);
  policies_.Set("leash-iris", "openai.com");
  bool ports_free = false;
  int retakes = 0;
  tweak_ = [&](ReconcilerOptions& options) {
    options.port_usable = [&](uint16_t) { return ports_free; };
    options.retake_ports = [&] {
      ++retakes;
      return std::vector<std::string>();
    };
    options.port_holders = [] { return std::string("uid 1234 pid 99 (squat) holds tcp 18000-18999"); };
  };
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_TRUE(report.error().empty()) << report.error();
  EXPECT_EQ(retakes, 1);
  for (uint32_t uid : {1000u, 1001u}) {
    const SubjectState& state = Subject(*r, uid);
    EXPECT_EQ(state.port, 0);
    ASSERT_TRUE(state.chain.has_value()) << uid;
    EXPECT_EQ(state.chain->port, 0);
    EXPECT_TRUE(state.chain->refuse_tcp);
    EXPECT_FALSE(state.chain->udp_allowed);
    EXPECT_TRUE(state.chain->dns_resolvers.empty());
    EXPECT_THAT(state.problem, HasSubstr("refused: no proxy port for it"));
    EXPECT_THAT(state.problem, HasSubstr("uid 1234 pid 99 (squat)"));
    ASSERT_EQ(netfilter_.subjects().count(uid), 1u);
    EXPECT_EQ(netfilter_.subjects().at(uid).port, 0);
  }
  EXPECT_FALSE(report.not_in_force().empty());  // so the loop tries again
  ports_free = true;
  report = r->RunPass();
  ASSERT_TRUE(report.error().empty()) << report.error();
  EXPECT_EQ(retakes, 2);
  EXPECT_EQ(Subject(*r, 1001).port, 18001);
  EXPECT_TRUE(Subject(*r, 1001).problem.empty()) << Subject(*r, 1001).problem;
  ASSERT_TRUE(Subject(*r, 1001).chain.has_value());
  EXPECT_FALSE(Subject(*r, 1001).chain->refuse_tcp);
  EXPECT_EQ(netfilter_.subjects().at(1001).port, 18001);
  ASSERT_NE(fswatch_->map(), nullptr);
  EXPECT_TRUE(fswatch_->map()->at(1001).policy->DecideNetwork({"openai.com", std::nullopt, 443})
                  .allowed());
}

TEST_F(ReconcilerTest, ANameEntryReachesASameNamedLinksTargetResolvedOnEveryPass) {
  LEASH_REQUIRE_ROOT();  // the link's folder must be root's
  const std::string bin = dir_->Join("bin");
  ASSERT_EQ(mkdir(bin.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir_->path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);
  for (const char* name : {"python3.11", "python3.12"}) {
    std::ofstream(bin + "/" + name) << "";
    ASSERT_EQ(chmod((bin + "/" + name).c_str(), 0755), 0);
  }
  ASSERT_EQ(symlink("python3.11", (bin + "/python3").c_str()), 0);
  command_search_path_ = {bin};
  policies_.floor.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  policies_.floor.mutable_commands()->mutable_allow()->add_entries("python3");
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  auto allowed = [&](const std::string& program) {
    return fswatch_->map()->at(1000).policy->DecideCommand(program).allowed();
  };
  EXPECT_TRUE(allowed(bin + "/python3.11"));
  EXPECT_FALSE(allowed(bin + "/python3.12"));
  // An upgrade moves the link: the next pass sends the new target, and only it.
  ASSERT_EQ(unlink((bin + "/python3").c_str()), 0);
  ASSERT_EQ(symlink("python3.12", (bin + "/python3").c_str()), 0);
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_EQ(report.changes_size(), 1);
  EXPECT_EQ(report.changes(0).change(), "reapplied");
  EXPECT_FALSE(allowed(bin + "/python3.11"));
  EXPECT_TRUE(allowed(bin + "/python3.12"));
}

TEST_F(ReconcilerTest, EveryPassReadsTheExecRoutes) {
  leash::v1::ReconcileReport report = Make()->RunPass();
  ASSERT_EQ(report.exec_routes_size(), 3);
  EXPECT_EQ(report.exec_routes(0).name(), "memfd exec");
  EXPECT_TRUE(report.exec_routes(0).open());
}

// Rule C6, and why a pass that brings in a new subject publishes twice: the sidecars hold the
// subject one way when its chain goes in (denied in the watcher, its listener in the proxy) and
// another way once the pass ends (its policy), and only a publish changes what they hold. A
// pass merged into one publish fails here, whichever side of the chain that publish is on.
TEST_F(ReconcilerTest, NewSubjectDeniedInWatcherBeforeItsChainGoesIn) {
  auto r = Make();
  r->RunPass();
  accounts_.Add("leash-iris", 1001);
  policies_.Set("leash-iris", "openai.com");
  bool checked = false;
  netfilter_.SetBeforeApply([&](const NetfilterSubject& s) {
    if (s.uid != 1001) return;
    policystream::SubjectMapPtr map = fswatch_->map();
    ASSERT_TRUE(map->count(1001)) << "the watcher had not acked a map holding the subject";
    EXPECT_EQ(map->at(1001).policy, nullptr) << "the subject must be denied, not yet allowed";
    EXPECT_TRUE(map->at(1001).onboarding) << "denied as a new subject, not as a misconfigured one";
    // The chain redirects to a listener the proxy already holds for this subject.
    policystream::SubjectMapPtr proxy_map = proxy_->map();
    ASSERT_TRUE(proxy_map->count(1001)) << "the proxy had not acked a map holding the subject";
    EXPECT_EQ(proxy_map->at(1001).port, s.port);
    checked = true;
  });
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_TRUE(checked);
  ASSERT_EQ(report.changes_size(), 1);
  EXPECT_EQ(report.changes(0).change(), "added");
  EXPECT_NE(fswatch_->map()->at(1001).policy, nullptr) << "the pass must end with its policy";
  EXPECT_NE(proxy_->map()->at(1001).policy, nullptr);
  EXPECT_FALSE(fswatch_->map()->at(1001).onboarding);
}

// Each publish is one map version that both sidecars ack before the pass goes on. A pass
// publishes nothing when nothing changed, once for a change, and twice only when it brings in
// a new subject (rule C6: the test above says why) or moves a subordinate range.
TEST_F(ReconcilerTest, APassPublishesNothingForNothingOnceForAChangeTwiceForANewSubject) {
  accounts_.Add("leash-iris", 1001);
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  policies_.Set("leash-iris", "openai.com");
  auto r = Make();
  auto publishes = [&] {
    const uint64_t before = stream_.version();
    leash::v1::ReconcileReport report = r->RunPass();
    EXPECT_TRUE(report.error().empty()) << report.error();
    EXPECT_EQ(report.not_in_force_size(), 0) << report.DebugString();
    return stream_.version() - before;
  };
  EXPECT_EQ(publishes(), 2u) << "the first pass: every subject is new";
  EXPECT_EQ(publishes(), 0u) << "nothing changed";
  policies_.Set("leash-iris", "anthropic.com");
  EXPECT_EQ(publishes(), 1u) << "a policy edit";
  accounts_.Add("leash-vader", 1002);
  EXPECT_EQ(publishes(), 2u) << "a new subject";
  EXPECT_NE(fswatch_->map()->at(1002).policy, nullptr);
  accounts_.SetSubordinateUids("leash-iris", {{300000, 365535}});
  // Twice: the sidecars learn whose the new range is before its chain goes in, and then that
  // the chain holds it (the watcher holds /etc/subuid for a range until then).
  EXPECT_EQ(publishes(), 2u) << "a subject's subordinate range moved";
  EXPECT_THAT(fswatch_->map()->at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{300000, 365535}));
  EXPECT_THAT(fswatch_->map()->at(1001).subordinate_uids_in_chain,
              ElementsAre(engine::UidRange{300000, 365535}));
  EXPECT_THAT(netfilter_.subjects().at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{300000, 365535}));
  accounts_.Remove("leash-vader");
  EXPECT_EQ(publishes(), 1u) << "a subject removed";
  EXPECT_THAT(fswatch_->map()->at(1002).no_policy_reason, HasSubstr("left discovery"));
  EXPECT_EQ(publishes(), 0u) << "nothing changed since";
}

TEST_F(ReconcilerTest, SubordinateRangesAreTheSubjectsOnEverySurfaceAndTheirChangeIsAChange) {
  accounts_.Add("leash-iris", 1001);
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  policies_.Set("leash-iris", "openai.com");
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  // The watcher and the proxy get the ranges with the subject; the chain dispatches them.
  EXPECT_THAT(fswatch_->map()->at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}));
  EXPECT_THAT(proxy_->map()->at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}));
  ASSERT_TRUE(Subject(*r, 1001).chain.has_value());
  EXPECT_THAT(Subject(*r, 1001).chain->subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}));
  EXPECT_THAT(Subject(*r, 1001).subordinate_uids, ElementsAre(engine::UidRange{100000, 165535}));
  // The ranges are read again on every pass: a new range is a changed subject.
  netfilter_.ClearCalls();
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}, {300000, 300009}});
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_EQ(report.changes_size(), 1);
  EXPECT_EQ(report.changes(0).change(), "reapplied");
  EXPECT_THAT(Calls(netfilter_), ElementsAre("apply 1001:18001"));
  EXPECT_THAT(fswatch_->map()->at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}, engine::UidRange{300000, 300009}));
}

TEST_F(ReconcilerTest, ARangeMovingToANewSubjectIsReleasedByItsOldHolderFirst) {
  accounts_.Add("leash-iris", 1001);
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  // One change to /etc/subuid: the range leaves leash-iris and goes to a new account.
  accounts_.SetSubordinateUids("leash-iris", {});
  accounts_.Add("leash-new", 1003);
  accounts_.SetSubordinateUids("leash-new", {{100000, 165535}});
  bool checked = false;
  netfilter_.SetBeforeApply([&](const NetfilterSubject& s) {
    if (s.uid != 1003) return;
    // The watcher never holds one UID for two subjects, even for a moment.
    policystream::SubjectMapPtr map = fswatch_->map();
    EXPECT_TRUE(map->at(1001).subordinate_uids.empty());
    checked = true;
  });
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_TRUE(checked);
  for (const std::string& w : report.warnings()) ADD_FAILURE() << w;
  EXPECT_TRUE(report.not_in_force().empty());
  ASSERT_TRUE(Subject(*r, 1003).chain.has_value()) << Subject(*r, 1003).problem;
  EXPECT_THAT(netfilter_.subjects().at(1003).subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}));
  EXPECT_TRUE(netfilter_.subjects().at(1001).subordinate_uids.empty());
  EXPECT_NE(fswatch_->map()->at(1003).policy, nullptr);
}

TEST_F(ReconcilerTest, TwoSubjectsSwappingRangesInOnePassAreAppliedTogether) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  accounts_.SetSubordinateUids("leash-vader", {{165536, 231071}});
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  accounts_.SetSubordinateUids("leash-iris", {{165536, 231071}});
  accounts_.SetSubordinateUids("leash-vader", {{100000, 165535}});
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_TRUE(report.not_in_force().empty());
  EXPECT_THAT(netfilter_.subjects().at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{165536, 231071}));
  EXPECT_THAT(netfilter_.subjects().at(1002).subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}));
  EXPECT_NE(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_NE(fswatch_->map()->at(1002).policy, nullptr);
}

TEST_F(ReconcilerTest, OverlappingSubordinateRangesDenyBothSubjectsAndSayWhy) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  accounts_.SetSubordinateUids("leash-vader", {{165000, 231071}});
  policies_.Set("leash-iris", "openai.com");
  policies_.Set("leash-vader", "github.com");
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_TRUE(report.error().empty()) << report.error();
  for (uint32_t uid : {1001u, 1002u}) {
    EXPECT_EQ(fswatch_->map()->at(uid).policy, nullptr) << uid;
    EXPECT_THAT(Subject(*r, uid).problem, HasSubstr("overlap")) << uid;
    // Denied, but its chain is in: its processes reach the proxy's refusing listener.
    EXPECT_TRUE(Subject(*r, uid).chain.has_value()) << uid;
  }
  // The shared UIDs belong to exactly one of them; nothing is claimed twice.
  EXPECT_THAT(Subject(*r, 1001).chain->subordinate_uids,
              ElementsAre(engine::UidRange{100000, 165535}));
  EXPECT_THAT(Subject(*r, 1002).chain->subordinate_uids,
              ElementsAre(engine::UidRange{165536, 231071}));
  int critical = 0;
  for (const std::string& w : report.warnings()) {
    if (absl::StrContains(w, "critical") && absl::StrContains(w, "overlap")) ++critical;
  }
  EXPECT_EQ(critical, 2);
  // fido is untouched.
  EXPECT_NE(fswatch_->map()->at(1000).policy, nullptr);
}

TEST_F(ReconcilerTest, ASubordinateRangeHoldingAnotherAccountDeniesTheSubjectAndSparesThatUid) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("bob", 100500);  // not an agent: Leash never confines it
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(Subject(*r, 1001).problem, HasSubstr("100500 of bob"));
  EXPECT_THAT(fswatch_->map()->at(1001).subordinate_uids,
              ElementsAre(engine::UidRange{100000, 100499}, engine::UidRange{100501, 165535}));
}

TEST_F(ReconcilerTest, ASubordinateGidRangeHoldingAHostGroupDeniesTheSubject) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  accounts_.AddGroup("docker", 150);
  accounts_.SetSubordinateGids("leash-iris", {{100, 200}});
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(Subject(*r, 1001).problem, HasSubstr("GID 150 of group docker"));
  EXPECT_NE(fswatch_->map()->at(1002).policy, nullptr);
}

TEST_F(ReconcilerTest, UnknownSubordinateRangesDenyTheSubject) {
  accounts_.Add("leash-iris", 1001);
  accounts_.SetSubordinateProblem("leash-iris", "line 3 of /etc/subuid names it but cannot be read");
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(Subject(*r, 1001).problem, HasSubstr("line 3 of /etc/subuid"));
}

TEST_F(ReconcilerTest, AnUnreadableAccountDatabaseForTheRangeCheckChangesNothing) {
  accounts_.Add("leash-iris", 1001);
  auto r = Make();
  ASSERT_TRUE(r->RunPass().error().empty());
  accounts_.SetSubordinateUids("leash-iris", {{100000, 165535}});
  accounts_.SetRangeWalkUnreadable(true);
  netfilter_.ClearCalls();
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_THAT(report.error(), HasSubstr("nothing was changed"));
  EXPECT_THAT(Calls(netfilter_), ::testing::IsEmpty());
  EXPECT_TRUE(fswatch_->map()->at(1001).subordinate_uids.empty());
}

TEST_F(ReconcilerTest, ChangedBindingReappliesOnlyThatSubject) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  policies_.Set("leash-iris", "openai.com");
  policies_.Set("leash-vader", "github.com");
  auto r = Make();
  r->RunPass();
  policystream::SubjectMapPtr before = fswatch_->map();
  netfilter_.ClearCalls();
  const uint64_t version_before = stream_.version();

  policies_.Set("leash-iris", "anthropic.com");
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_THAT(Calls(netfilter_), ElementsAre("apply 1001:18001"));
  ASSERT_EQ(report.changes_size(), 1);
  EXPECT_EQ(report.changes(0).account(), "leash-iris");
  EXPECT_EQ(report.changes(0).change(), "reapplied");
  EXPECT_EQ(report.unchanged(), 2u);
  // One delta carrying only that subject: the others keep the very same compiled policy.
  EXPECT_EQ(stream_.version(), version_before + 1);
  policystream::SubjectMapPtr after = fswatch_->map();
  EXPECT_EQ(after->at(1002).policy, before->at(1002).policy);
  EXPECT_EQ(after->at(1000).policy, before->at(1000).policy);
  EXPECT_NE(after->at(1001).policy, before->at(1001).policy);
}

// network.inbound reaches the subject's chain, and changing it re-applies that chain alone.
TEST_F(ReconcilerTest, InboundAllowReachesOnlyThatSubjectsChain) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  policies_.Set("leash-iris", "openai.com");
  policies_.Set("leash-vader", "github.com");
  auto r = Make();
  r->RunPass();
  EXPECT_FALSE(netfilter_.subjects().at(1001).inbound_allowed);
  netfilter_.ClearCalls();
  policies_.SetInbound("leash-iris", leash::v1::INBOUND_MODE_ALLOW);
  r->RunPass();
  EXPECT_THAT(Calls(netfilter_), ElementsAre("apply 1001:18001"));
  EXPECT_TRUE(netfilter_.subjects().at(1001).inbound_allowed);
  EXPECT_FALSE(netfilter_.subjects().at(1002).inbound_allowed);
  EXPECT_FALSE(netfilter_.subjects().at(1000).inbound_allowed);
}

// The host's resolvers reach both the chain (its DNS redirect) and the proxy (where its filter
// forwards); network.dns: resolvers turns the redirect off for that subject alone.
TEST_F(ReconcilerTest, DnsFilterAndTheResolversReachTheChainAndTheProxy) {
  std::ofstream(dir_->Join("resolv.conf")) << "nameserver 192.0.2.53\nnameserver 2001:db8::53\n";
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  policies_.Set("leash-iris", "openai.com");
  policies_.Set("leash-vader", "github.com");
  auto r = Make();
  r->RunPass();
  const NetfilterSubject iris = netfilter_.subjects().at(1001);
  EXPECT_TRUE(iris.dns_filter);
  ASSERT_EQ(iris.dns_resolvers.size(), 2u);
  EXPECT_EQ(engine::FormatIpAddress(iris.dns_resolvers[0]), "192.0.2.53");
  EXPECT_THAT(Subject(*r, 1001).published.dns_resolvers(), ElementsAre("192.0.2.53", "2001:db8::53"));
  netfilter_.ClearCalls();
  policies_.SetDns("leash-vader", leash::v1::DNS_MODE_RESOLVERS);
  r->RunPass();
  EXPECT_THAT(Calls(netfilter_), ElementsAre("apply 1002:18002"));
  EXPECT_FALSE(netfilter_.subjects().at(1002).dns_filter);
  EXPECT_TRUE(netfilter_.subjects().at(1001).dns_filter);
}

TEST_F(ReconcilerTest, UnchangedSubjectIsNotTouchedAtAll) {
  accounts_.Add("leash-iris", 1001);
  auto r = Make();
  r->RunPass();
  netfilter_.ClearCalls();
  const uint64_t version = stream_.version();
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_TRUE(Calls(netfilter_).empty());
  EXPECT_EQ(stream_.version(), version);
  EXPECT_EQ(report.changes_size(), 0);
  EXPECT_EQ(report.unchanged(), 2u);
}

TEST_F(ReconcilerTest, DanglingProfileDeniesOnlyItsSubject) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  policies_.SetError("leash-iris", "binding agent:leash-iris names profile 'gone', which does not exist");
  policies_.Set("leash-vader", "github.com");
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  policystream::SubjectMapPtr map = fswatch_->map();
  EXPECT_EQ(map->at(1001).policy, nullptr);
  EXPECT_THAT(map->at(1001).no_policy_reason, HasSubstr("profile 'gone'"));
  EXPECT_NE(map->at(1002).policy, nullptr);
  // Fail-closed reading (docs/ARCHITECTURE.md, rule S3): the denied subject still gets its
  // chain and listener.
  EXPECT_TRUE(Subject(*r, 1001).chain.has_value());
  bool said = false;
  for (const auto& w : report.warnings()) said |= w.find("leash-iris (uid 1001) has no policy") != std::string::npos;
  EXPECT_TRUE(said);
}

// A subject allowed bigger tool inputs than the tools socket takes would have its bigger calls
// refused by the transport, unlogged: every pass says so, naming the flag and a value that fits.
TEST_F(ReconcilerTest, ToolInputsTheToolsSocketCannotCarryAreWarnedAbout) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  policies_.Set("leash-iris", "openai.com");
  policies_.Set("leash-vader", "github.com");
  policies_.SetMaxToolInputBytes("leash-iris", 8 << 20);
  auto r = Make(/*single_subject=*/false, /*tools_max_request_bytes=*/4 << 20);
  for (int pass = 0; pass < 2; ++pass) {
    leash::v1::ReconcileReport report = r->RunPass();
    std::vector<std::string> said;
    for (const auto& w : report.warnings()) {
      if (w.find("tools socket") != std::string::npos) said.push_back(w);
    }
    ASSERT_EQ(said.size(), 1u) << "pass " << pass;
    EXPECT_THAT(said[0], HasSubstr("leash-iris: tools.max_input_bytes is 8388608 but the tools "
                                   "socket takes requests of at most 4194304 bytes"));
    EXPECT_THAT(said[0], HasSubstr("--tools-max-request-bytes=8454144"));
  }
}

// "No limit" written as the largest number: no overflow hides the warning, and the advice is
// one the flag can follow.
TEST_F(ReconcilerTest, AnUnboundedToolInputIsWarnedAboutWithAFixThatExists) {
  accounts_.Add("leash-iris", 1001);
  policies_.Set("leash-iris", "openai.com");
  policies_.SetMaxToolInputBytes("leash-iris", std::numeric_limits<uint64_t>::max());
  auto r = Make(/*single_subject=*/false, /*tools_max_request_bytes=*/4 << 20);
  leash::v1::ReconcileReport report = r->RunPass();
  std::string said;
  for (const auto& w : report.warnings()) {
    if (w.find("tools socket") != std::string::npos) said = w;
  }
  EXPECT_THAT(said, HasSubstr("tools.max_input_bytes is 18446744073709551615"));
  EXPECT_THAT(said, HasSubstr("lower tools.max_input_bytes to 2147418111 or less"));
}

TEST_F(ReconcilerTest, CorruptPortMapChangesNothing) {
  accounts_.Add("leash-iris", 1001);
  auto r = Make();
  r->RunPass();
  netfilter_.ClearCalls();
  const uint64_t version = stream_.version();
  std::ofstream(dir_->Join("state/ports.json")) << "{\"format\":1,";
  accounts_.Add("leash-vader", 1002);
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_THAT(report.error(), HasSubstr("is corrupt"));
  EXPECT_THAT(report.error(), HasSubstr("nothing was changed"));
  EXPECT_TRUE(Calls(netfilter_).empty());
  EXPECT_EQ(stream_.version(), version);
  EXPECT_EQ(r->subjects().size(), 2u);
}

TEST_F(ReconcilerTest, UnreadablePasswdChangesNothing) {
  accounts_.Add("leash-iris", 1001);
  auto r = Make();
  r->RunPass();
  netfilter_.ClearCalls();
  const uint64_t version = stream_.version();
  accounts_.SetUnreadable(true);
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_THAT(report.error(), HasSubstr("account database"));
  EXPECT_TRUE(Calls(netfilter_).empty());
  EXPECT_EQ(stream_.version(), version);
  EXPECT_NE(fswatch_->map()->at(1001).policy, nullptr) << "a subject lost its policy";
}

TEST_F(ReconcilerTest, UnreadableFloorChangesNothing) {
  auto r = Make();
  r->RunPass();
  const uint64_t version = stream_.version();
  policies_.SetUnreadable(true);
  EXPECT_THAT(r->RunPass().error(), HasSubstr("EACCES"));
  EXPECT_EQ(stream_.version(), version);
}

TEST_F(ReconcilerTest, SubjectThatLeftDiscoveryKeepsItsChainAndLosesItsPolicy) {
  accounts_.Add("leash-iris", 1001);
  auto r = Make();
  r->RunPass();
  netfilter_.ClearCalls();
  accounts_.Remove("leash-iris");
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_TRUE(Calls(netfilter_).empty()) << "the chain must be kept, not released";
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(fswatch_->map()->at(1001).no_policy_reason, HasSubstr("left discovery"));
  ASSERT_EQ(report.changes_size(), 1);
  EXPECT_EQ(report.changes(0).change(), "left-discovery");
  EXPECT_TRUE(Subject(*r, 1001).chain.has_value());
}

TEST_F(ReconcilerTest, ChainThatWillNotApplyDeniesThatSubjectAlone) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  netfilter_.FailApply(1001, absl::InternalError("netlink: EPERM"));
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_FALSE(fswatch_->map()->at(1001).onboarding) << "denied for real, so reported critical";
  EXPECT_NE(fswatch_->map()->at(1002).policy, nullptr);
  EXPECT_THAT(Calls(netfilter_), ::testing::Contains("apply 1002:18002"));
  // The policy on disk asks for more than is in force: a write's CLI must not exit 0. And a
  // new subject with no chain is not "denied everything" on the network: nothing redirects or
  // filters its traffic, and the report says so.
  EXPECT_THAT(report.not_in_force(),
              ElementsAre("leash-iris (uid 1001) is denied its files and commands, but its "
                          "network traffic is NOT confined: its nftables chain would not apply"));
  EXPECT_TRUE(report.retry());
  // A retry while the chain still fails says the same, not "denied everything".
  report = r->RunPass();
  EXPECT_THAT(report.not_in_force(),
              ElementsAre("leash-iris (uid 1001) is denied its files and commands, but its "
                          "network traffic is NOT confined: its nftables chain would not apply"));
  // The next pass tries the chain again; once it goes in, the subject gets its policy.
  netfilter_.ClearFailures();
  report = r->RunPass();
  EXPECT_EQ(report.not_in_force_size(), 0) << report.DebugString();
  EXPECT_NE(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(Calls(netfilter_), ::testing::Contains("apply 1001:18001"));
}

// The policies go out once per pass, after the chains and the listeners have said what they
// deny: a new subject's denial before its chain is the one publish that precedes them.
TEST_F(ReconcilerTest, APassPublishesEachSubjectsPolicyOnce) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  netfilter_.FailApply(1001, absl::InternalError("netlink: EPERM"));
  proxy_->SetUnbindable(1002);
  auto r = Make();
  uint64_t version = stream_.version();
  r->RunPass();
  // The onboarding (every subject denied) and the policies, the failures folded in.
  EXPECT_EQ(stream_.version(), version + 2);
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(fswatch_->map()->at(1002).no_policy_reason, HasSubstr("listener would not bind"));
  EXPECT_NE(fswatch_->map()->at(1000).policy, nullptr);

  // A changed subject whose chain will not re-apply: one publish, already denying it.
  netfilter_.ClearFailures();
  proxy_->ClearUnbindable();
  r->RunPass();
  ASSERT_NE(fswatch_->map()->at(1001).policy, nullptr);
  netfilter_.FailApply(1001, absl::InternalError("netlink: EPERM"));
  policies_.Set("leash-iris", "anthropic.com");
  version = stream_.version();
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_EQ(stream_.version(), version + 1);
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(fswatch_->map()->at(1001).no_policy_reason, HasSubstr("would not re-apply"));
  EXPECT_TRUE(report.retry());
}

TEST_F(ReconcilerTest, ListenerThatWillNotBindDeniesThatSubjectAlone) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  proxy_->SetUnbindable(1002);
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_EQ(fswatch_->map()->at(1002).policy, nullptr);
  EXPECT_THAT(fswatch_->map()->at(1002).no_policy_reason, HasSubstr("listener would not bind"));
  EXPECT_NE(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_THAT(report.not_in_force(),
              ElementsAre("leash-vader (uid 1002) is denied everything: its proxy listener would "
                          "not bind (port 18002; leashd's log says why, e.g. another process "
                          "holds it)"));
  EXPECT_TRUE(report.retry());
  // Its chain resets its TCP instead of redirecting it to a port someone else holds.
  auto last_chain_of = [&](uint32_t uid) {
    std::optional<NetfilterSubject> last;
    for (const auto& call : netfilter_.calls()) {
      for (const NetfilterSubject& s : call.subjects) {
        if (s.uid == uid) last = s;
      }
    }
    return last;
  };
  ASSERT_TRUE(last_chain_of(1002).has_value());
  EXPECT_TRUE(last_chain_of(1002)->refuse_tcp);
  EXPECT_FALSE(last_chain_of(1001)->refuse_tcp);
  // Once the port is free, the retry puts the listener, the redirect and the policy back.
  proxy_->ClearUnbindable();
  r->RunPass();  // publishes the policy again; the proxy binds and acks with nothing failed
  report = r->RunPass();
  EXPECT_EQ(report.not_in_force_size(), 0) << report.DebugString();
  EXPECT_FALSE(last_chain_of(1002)->refuse_tcp);
  EXPECT_NE(fswatch_->map()->at(1002).policy, nullptr);
}

TEST_F(ReconcilerTest, ASidecarThatDoesNotAcknowledgeLeavesThePolicyNotInForce) {
  accounts_.Add("leash-iris", 1001);
  proxy_.reset();  // no proxy subscribed: nobody acknowledges the network side
  // Long enough for the watcher that does acknowledge to be seen doing so on a loaded machine
  // (its ack is real, on another thread); each publish waits it out for the absent proxy.
  auto r = Make(/*single_subject=*/false, /*tools_max_request_bytes=*/0,
                /*ack_timeout=*/absl::Seconds(1));
  leash::v1::ReconcileReport report = r->RunPass();
  // A first pass publishes twice (new subjects denied first, then their policies): each
  // version the proxy did not acknowledge is named.
  ASSERT_GE(report.not_in_force_size(), 1) << report.DebugString();
  for (const std::string& line : report.not_in_force()) {
    EXPECT_THAT(line, ::testing::MatchesRegex("the proxy has not put map version [0-9]+ in force"));
  }
}

// The watcher puts a map in force and then marks the filesystems it needs; when a mark will not
// go on it says so in its ack. Opens there are not judged, so the write is not in force (it
// used to count as acknowledged, and `leash bind` exited 0).
TEST_F(ReconcilerTest, AWatcherAckThatSaysMarksFailedIsNotInForce) {
  accounts_.Add("leash-iris", 1001);
  fswatch_->SetAckError("filesystems not watched: /srv: fanotify_mark: ENOSPC");
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_GE(report.not_in_force_size(), 1) << report.DebugString();
  for (const std::string& line : report.not_in_force()) {
    EXPECT_THAT(line, ::testing::MatchesRegex(
                          "the filesystem watcher put map version [0-9]+ in force, but: "
                          "filesystems not watched: /srv: fanotify_mark: ENOSPC"));
  }
  EXPECT_TRUE(report.retry());
  // A pass that publishes nothing still looks: the watcher's last ack still says so.
  report = r->RunPass();
  EXPECT_THAT(report.not_in_force(),
              ElementsAre(::testing::HasSubstr("filesystems not watched: /srv")));
  // Once the marks go on, the next write is in force again.
  fswatch_->SetAckError("");
  policies_.Set("leash-iris", "openai.com");
  EXPECT_EQ(r->RunPass().not_in_force_size(), 0);
}

// A pass that publishes nothing still checks that each sidecar has the latest map in force: a
// retry after an ack timeout used to find no diff and call everything in force.
TEST_F(ReconcilerTest, APassThatPublishesNothingStillSeesASidecarWithoutTheMap) {
  accounts_.Add("leash-iris", 1001);
  auto r = Make(/*single_subject=*/false, /*tools_max_request_bytes=*/0,
                /*ack_timeout=*/absl::Milliseconds(200));
  ASSERT_EQ(r->RunPass().not_in_force_size(), 0);
  proxy_.reset();  // the proxy goes away
  policies_.Set("leash-iris", "openai.com");
  ASSERT_GE(r->RunPass().not_in_force_size(), 1);
  leash::v1::ReconcileReport again = r->RunPass();  // nothing to publish
  EXPECT_THAT(again.not_in_force(),
              ElementsAre(::testing::MatchesRegex("the proxy has not put map version [0-9]+ in force")));
  EXPECT_TRUE(again.retry());
}

// A subject whose policy files do not resolve is the files' state, not the host's: it is
// warned about (and `leash validate` says why), but it does not make every write fail.
TEST_F(ReconcilerTest, APolicyThatDoesNotResolveIsNotCountedAsNotInForce) {
  accounts_.Add("leash-iris", 1001);
  policies_.SetError("leash-iris", "binding agent:leash-iris names profile 'gone'");
  auto r = Make();
  leash::v1::ReconcileReport report = r->RunPass();
  EXPECT_EQ(fswatch_->map()->at(1001).policy, nullptr);
  EXPECT_EQ(report.not_in_force_size(), 0) << report.DebugString();
}

TEST_F(ReconcilerTest, NoPolicyCarriesTheFloorFailMode) {
  policies_.floor.set_fail_mode("open");
  accounts_.Add("leash-iris", 1001);
  policies_.SetError("leash-iris", "dangling");
  auto r = Make();
  r->RunPass();
  EXPECT_EQ(fswatch_->map()->at(1001).no_policy_fail_mode, engine::FailMode::kOpen);
}

TEST_F(ReconcilerTest, PortsAreStableAcrossRestarts) {
  accounts_.Add("leash-iris", 1001);
  accounts_.Add("leash-vader", 1002);
  auto first = Make();
  first->RunPass();
  accounts_.Add("leash-abe", 1003);  // sorts first, but ports are per account for life
  auto second = Make();
  second->RunPass();
  EXPECT_EQ(Subject(*second, 1001).port, 18001);
  EXPECT_EQ(Subject(*second, 1002).port, 18002);
  EXPECT_EQ(Subject(*second, 1003).port, 18003);
}

TEST_F(ReconcilerTest, SingleSubjectHostUsesTheSingleAgentPortAndSaysSoOnTheFirstAgent) {
  auto r = Make(/*single_subject=*/true);
  r->RunPass();
  EXPECT_EQ(Subject(*r, 1000).port, kSingleSubjectPort);
  struct stat st;
  EXPECT_NE(stat(dir_->Join("state").c_str(), &st), 0) << "single-subject must not create the state dir";
  accounts_.Add("leash-iris", 1001);
  leash::v1::ReconcileReport report = r->RunPass();
  ASSERT_GE(report.warnings_size(), 1);
  EXPECT_THAT(report.warnings(0), HasSubstr("cannot grow its first agent"));
  EXPECT_THAT(report.warnings(0), HasSubstr("systemctl restart leash.service"));
  EXPECT_EQ(r->subjects().count(1001), 0u);
  // The warning is said once; that the agent is not enforced is said on every pass.
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_EQ(report.not_in_force_size(), 1) << "pass " << pass;
    EXPECT_THAT(report.not_in_force(0),
                HasSubstr("agent account(s) leash-iris are not enforced"));
    report = r->RunPass();
  }
}

}  // namespace
}  // namespace leash::controlplane
