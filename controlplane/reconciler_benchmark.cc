// A reconcile of a host with 1,000 agent subjects where one agent's binding changed (the
// target: ≤ 20 ms, and exactly one subject re-applied). Everything but the kernel is real: the
// floor file, profiles and bindings.yaml read by the BindingStore and resolved by the tier
// Resolver, ports.json, PolicyStream over a Unix socket to two subscribers (standing in for
// the sidecars' acks), and the diff; the netfilter is the FakeNetfilter whose call log says
// how many subjects were re-applied.
//
//   bazel run -c opt //controlplane:reconciler_benchmark -- --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "controlplane/policy_store.h"
#include "proto/policystream/policy_stream_service.h"
#include "controlplane/reconciler.h"
#include "proto/policystream/policy_subscriber.h"
#include "controlplane/testing/fake_accounts.h"
#include "controlplane/testing/fake_netfilter.h"
#include "controlplane/tiered_policy_source.h"
#include "engine/bindings_yaml.h"
#include "grpcpp/grpcpp.h"

namespace leash::controlplane {
namespace {

constexpr int kAgents = 1000;
constexpr int kProfiles = 50;

std::string AgentName(int i) { return absl::StrCat("leash-b", 10000 + i); }

// Profile p: its own host allowed (a loosening each binding acks) and a few tightenings.
std::string ProfileYaml(int p) {
  std::string deny = "[";
  for (int i = 0; i < 20; ++i) absl::StrAppend(&deny, i ? ", " : "", "\"bad", p, "-", i, ".example\"");
  return absl::StrCat("network: { allow: [\"host", p, ".example\"], deny: ", deny, "] }\n",
                      "commands: { deny: [\"nc\", \"socat\"] }\n");
}

engine::Binding AgentBinding(int agent, int profile) {
  engine::Binding b;
  b.scope = absl::StrCat("agent:", AgentName(agent));
  b.profile = absl::StrCat("p", profile);
  b.acks = {absl::StrCat("network.allow:host", profile, ".example")};
  return b;
}

class Host {
 public:
  Host() {
    char dir[] = "/tmp/leash-rbench-XXXXXX";
    root_ = mkdtemp(dir);
    state_ = root_ + "/state";
    mkdir(state_.c_str(), 0750);
    mkdir((state_ + "/profiles").c_str(), 0750);
    std::ofstream(root_ + "/leash.yaml")
        << "user: fido\nfail_mode: closed\n"
           "network: { mode: whitelist, allow: [\"github.com\"], deny: [\"evil.example\"] }\n"
           "filesystem: { mode: blacklist, deny: [\"/etc/shadow\"] }\n"
           "commands: { mode: whitelist, allow: [\"git\", \"python3\"] }\n";
    for (int p = 0; p < kProfiles; ++p) {
      std::ofstream(absl::StrCat(state_, "/profiles/p", p, ".yaml")) << ProfileYaml(p);
    }
    accounts_.Add("fido", 999);
    for (int i = 0; i < kAgents; ++i) {
      accounts_.Add(AgentName(i), 20000 + i);
      bindings_.Put(AgentBinding(i, i % kProfiles));
    }
    WriteBindings();

    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + root_ + "/s", grpc::InsecureServerCredentials());
    builder.RegisterService(&stream_);
    server_ = builder.BuildAndStart();
    for (auto kind : {leash::v1::SIDECAR_KIND_FSWATCH, leash::v1::SIDECAR_KIND_PROXY}) {
      policystream::SubscriberOptions options;
      options.socket_path = root_ + "/s";
      options.kind = kind;
      sidecars_.push_back(std::make_unique<policystream::PolicySubscriber>(
          options, [](policystream::SubjectMapPtr, uint64_t) { return leash::v1::PolicyAck(); },
          nullptr));
      sidecars_.back()->Start();
    }
    netfilter_.Prepare().IgnoreError();
    store_ = std::make_unique<BindingStore>(BindingStore::Options(state_));
    source_ = std::make_unique<TieredPolicySource>(root_ + "/leash.yaml", store_.get());
    ReconcilerOptions options;
    options.configured_user = "fido";
    options.ports_path = state_ + "/ports.json";
    options.resolv_conf_path = root_ + "/resolv.conf";
    reconciler_ = std::make_unique<Reconciler>(options, &accounts_, source_.get(), &netfilter_,
                                               &stream_);
  }

  ~Host() {
    sidecars_.clear();
    stream_.Shutdown();
    server_->Shutdown(std::chrono::system_clock::now());
    std::string command = "rm -rf " + root_;
    if (std::system(command.c_str()) != 0) std::abort();
  }

  void WriteBindings() {
    std::ofstream(state_ + "/bindings.yaml") << engine::EmitBindingsYaml(bindings_);
  }

  // Moves agent 0 to another profile, as `leash bind --no-reconcile` would leave the file.
  void ChangeOneBinding(int round) {
    bindings_.Put(AgentBinding(0, round % 2 == 0 ? 1 : 0));
    WriteBindings();
  }

  Reconciler& reconciler() { return *reconciler_; }
  testing::FakeNetfilter& netfilter() { return netfilter_; }

 private:
  std::string root_, state_;
  testing::FakeAccounts accounts_;
  engine::Bindings bindings_;
  policystream::PolicyStreamService stream_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::unique_ptr<policystream::PolicySubscriber>> sidecars_;
  testing::FakeNetfilter netfilter_;
  std::unique_ptr<BindingStore> store_;
  std::unique_ptr<TieredPolicySource> source_;
  std::unique_ptr<Reconciler> reconciler_;
};

void BM_ReconcileOneChangedOf1000(benchmark::State& state) {
  Host host;
  leash::v1::ReconcileReport first = host.reconciler().RunPass();
  if (!first.error().empty() || first.changes_size() != kAgents + 1) {
    state.SkipWithError(("first pass: " + first.error()).c_str());
    return;
  }
  int round = 0;
  int64_t reapplied = 0;
  int64_t unchanged = 0;
  for (auto _ : state) {
    state.PauseTiming();
    host.ChangeOneBinding(round++);
    host.netfilter().ClearCalls();
    state.ResumeTiming();
    leash::v1::ReconcileReport report = host.reconciler().RunPass();
    state.PauseTiming();
    reapplied += host.netfilter().CallsOf(testing::FakeNetfilter::Call::Kind::kApply).size();
    unchanged += report.unchanged();
    if (!report.error().empty() || report.changes_size() != 1) {
      state.SkipWithError(("pass changed " + std::to_string(report.changes_size()) +
                           " subjects: " + report.error()).c_str());
      return;
    }
    state.ResumeTiming();
  }
  state.counters["subjects_reapplied_per_pass"] =
      benchmark::Counter(static_cast<double>(reapplied), benchmark::Counter::kAvgIterations);
  state.counters["subjects_unchanged_per_pass"] =
      benchmark::Counter(static_cast<double>(unchanged), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_ReconcileOneChangedOf1000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReconcileNothingChangedOf1000(benchmark::State& state) {
  Host host;
  host.reconciler().RunPass();
  for (auto _ : state) {
    leash::v1::ReconcileReport report = host.reconciler().RunPass();
    if (report.changes_size() != 0) state.SkipWithError("an unchanged host changed");
  }
}
BENCHMARK(BM_ReconcileNothingChangedOf1000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace leash::controlplane

BENCHMARK_MAIN();
