// Resolving and judging a host of 1,000 agents bound to 50 profiles (the target: a full
// re-resolution under 100 ms). The floor carries realistic list sizes; a global binding
// tightens it; each profile loosens (so every binding carries acks) and tightens a little.
//
//   BM_ResolveAll          what a reconcile does: resolve every subject (global folded once).
//   BM_ValidateTiers       resolve + judge every binding + stale acks (leash validate).
//   BM_JudgeProfileEdit    one profile edit revalidating the 20 agents bound to it.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "engine/config_yaml.h"
#include "engine/consent.h"
#include "engine/tiers.h"

namespace leash::engine {
namespace {

constexpr int kAgents = 1000;
constexpr int kProfiles = 50;

std::string List(const std::string& prefix, int n, const std::string& suffix) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) absl::StrAppend(&out, i ? ", " : "", prefix, i, suffix);
  return out + "]";
}

leash::v1::Config Parse(const std::string& yaml, ConfigKind kind) {
  absl::StatusOr<leash::v1::Config> config = ParseConfigYaml(yaml, kind, "bench");
  if (!config.ok()) abort();
  return *config;
}

std::string ProfileYaml(int p) {
  return absl::StrCat(
      "network: {allow: ", List("host", 90, ".example.com"), ", deny: ",
      List("bad", 25, ".example.net"), "}\n",
      "filesystem: {allow: ", List("/srv/p" + std::to_string(p) + "/d", 10, ""), "}\n",
      "tools: {allow: [read_file, search, extra_", p, "], inspect: {pii: block}}\n",
      p % 5 == 0 ? "fail_mode: open\n" : "");
}

struct Host {
  leash::v1::Config floor;
  Bindings bindings;
  ProfileLibrary profiles;
  std::vector<std::string> accounts;

  Host() {
    floor = Parse(absl::StrCat("user: fido\nnetwork: {mode: whitelist, allow: ",
                               List("host", 100, ".example.com"), ", deny: ",
                               List("bad", 20, ".example.net"), "}\n",
                               "filesystem: {mode: whitelist, allow: ",
                               List("/srv/shared/d", 50, ""), ", deny: [/etc/shadow]}\n",
                               "commands: {mode: blacklist, deny: ", List("cmd", 20, ""), "}\n",
                               "tools: {mode: whitelist, allow: ", List("tool_", 20, ""), "}\n"),
                  ConfigKind::kFloor);
    for (int p = 0; p < kProfiles; ++p) {
      profiles.emplace(absl::StrCat("profile-", p), Parse(ProfileYaml(p), ConfigKind::kProfile));
    }
    profiles.emplace("global-strict",
                     Parse("commands: {deny: " + List("cmd", 25, "") + "}\n", ConfigKind::kProfile));
    bindings.Put({"global", "global-strict", {}});
    // Every agent bound with exactly the consent its profile needs.
    const Resolver current(floor, bindings, profiles);
    for (int a = 0; a < kAgents; ++a) {
      const std::string account = absl::StrCat("leash-agent-", a);
      const std::string profile = absl::StrCat("profile-", a % kProfiles);
      Binding binding{Scope::Agent(account).ToString(), profile, {}};
      for (const FieldChange& change :
           BindingLoosenings(current, Scope::Agent(account), *profiles.at(profile))) {
        binding.acks.push_back(change.ack_token);
      }
      bindings.Put(std::move(binding));
      accounts.push_back(account);
    }
  }
};

const Host& TheHost() {
  static const Host* host = new Host();
  return *host;
}

void BM_ResolveAll(benchmark::State& state) {
  const Host& host = TheHost();
  for (auto _ : state) {
    const Resolver resolver(host.floor, host.bindings, host.profiles);
    int resolved = 0;
    for (const std::string& account : host.accounts) {
      ResolvedSubject subject = resolver.ResolveAgent(account);
      resolved += subject.ok();
      benchmark::DoNotOptimize(subject);
    }
    if (resolved != kAgents) state.SkipWithError("a subject did not resolve");
  }
  state.SetItemsProcessed(state.iterations() * kAgents);
}
BENCHMARK(BM_ResolveAll)->Unit(benchmark::kMillisecond);

void BM_ValidateTiers(benchmark::State& state) {
  const Host& host = TheHost();
  for (auto _ : state) {
    std::vector<leash::v1::Finding> findings =
        ValidateTiers(host.floor, host.bindings, host.profiles, host.accounts);
    benchmark::DoNotOptimize(findings);
  }
  state.SetItemsProcessed(state.iterations() * kAgents);
}
BENCHMARK(BM_ValidateTiers)->Unit(benchmark::kMillisecond);

void BM_JudgeProfileEdit(benchmark::State& state) {
  const Host& host = TheHost();
  const Resolver current(host.floor, host.bindings, host.profiles);
  // An edit that adds one allow entry: a loosening none of the 20 bound agents consented to.
  leash::v1::Config edit = Parse(ProfileYaml(7), ConfigKind::kProfile);
  edit.mutable_network()->mutable_allow()->add_entries("new.example.org");
  for (auto _ : state) {
    ProfileEditJudgement judgement = JudgeProfileEdit(current, "profile-7", edit, {}, "");
    if (!judgement.refusal || judgement.refusal->loosenings_size() != kAgents / kProfiles) {
      state.SkipWithError("the edit was not refused for every bound agent");
    }
    benchmark::DoNotOptimize(judgement);
  }
}
BENCHMARK(BM_JudgeProfileEdit)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace leash::engine

BENCHMARK_MAIN();
