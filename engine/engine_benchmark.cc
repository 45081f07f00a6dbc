// Decision cost against list size: network, path and command decisions at 10, 1,000 and
// 100,000 entries per list. The indexes (label trie, per-prefix-length tables, component trie,
// hash sets) should keep the 100,000-entry time within a small factor of the 10-entry time.
//
//   bazel run -c opt //engine:engine_benchmark -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "engine/compiled_policy.h"

namespace leash::engine {
namespace {

// A policy with `n` entries in each allow list (whitelist everywhere) and n/10 deny entries.
// Entries vary in shape the way real lists do: domains of several depths with some wildcards
// and pinned ports, CIDRs of several prefix lengths, prefix paths with some globs.
leash::v1::Config MakePolicy(int n) {
  leash::v1::Config c;
  auto* net = c.mutable_network();
  auto* fs = c.mutable_filesystem();
  auto* cmd = c.mutable_commands();
  for (int i = 0; i < n; ++i) {
    std::string domain = absl::StrCat("svc", i, ".team", i % 97, ".example", i % 13, ".com");
    if (i % 10 == 0) domain = absl::StrCat("*.", domain);
    if (i % 7 == 0) absl::StrAppend(&domain, ":443");
    net->mutable_allow()->add_entries(domain);
    const int prefix = 16 + (i % 3) * 4;  // /16, /20, /24
    const uint32_t base = (10u << 24) | (static_cast<uint32_t>(i) << 8);
    const uint32_t mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
    const uint32_t network = base & mask;
    net->mutable_allow()->add_entries(absl::StrCat((network >> 24) & 255, ".", (network >> 16) & 255,
                                                   ".", (network >> 8) & 255, ".", network & 255,
                                                   "/", prefix));
    fs->mutable_allow()->add_entries(absl::StrCat("/srv/project", i, "/data"));
    if (i % 100 == 0) fs->mutable_allow()->add_entries(absl::StrCat("/srv/glob", i, "/*/*.txt"));
    cmd->mutable_allow()->add_entries(i % 2 ? absl::StrCat("tool", i)
                                            : absl::StrCat("/opt/bin", i % 50, "/tool", i));
    if (i % 10 == 0) {
      net->mutable_deny()->add_entries(absl::StrCat("bad", i, ".example.net"));
      fs->mutable_deny()->add_entries(absl::StrCat("/srv/project", i, "/data/secret"));
      cmd->mutable_deny()->add_entries(absl::StrCat("evil", i));
    }
  }
  return c;
}

// Half hits, half misses, drawn from across the list.
template <typename Fn>
void RunDecisions(benchmark::State& state, Fn make_subjects) {
  const int n = static_cast<int>(state.range(0));
  const CompiledPolicy policy = CompiledPolicy::Compile(MakePolicy(n));
  auto subjects = make_subjects(n);
  size_t i = 0;
  int allowed = 0;
  for (auto _ : state) {
    const auto& decide = subjects[i++ % subjects.size()];
    Decision d = decide(policy);
    allowed += d.allowed();
    benchmark::DoNotOptimize(d);
  }
  state.counters["allowed_fraction"] =
      benchmark::Counter(allowed, benchmark::Counter::kAvgIterations);
}

using DecideFn = std::function<Decision(const CompiledPolicy&)>;

void BM_DecideNetwork(benchmark::State& state) {
  RunDecisions(state, [](int n) {
    std::vector<DecideFn> out;
    for (int k = 0; k < 64; ++k) {
      const int i = (k * 7919) % n;
      NetworkSubject hit;
      hit.domain = absl::StrCat("api.svc", i, ".team", i % 97, ".example", i % 13, ".com");
      hit.ip = ParseIpAddress("198.51.100.1");
      hit.port = 443;
      NetworkSubject miss;
      miss.domain = absl::StrCat("api.other", i, ".example", i % 13, ".com");
      miss.ip = ParseIpAddress(absl::StrCat("172.16.", i & 255, ".9"));
      miss.port = 8080;
      out.push_back([hit](const CompiledPolicy& p) { return p.DecideNetwork(hit); });
      out.push_back([miss](const CompiledPolicy& p) { return p.DecideNetwork(miss); });
    }
    return out;
  });
}

void BM_DecidePath(benchmark::State& state) {
  RunDecisions(state, [](int n) {
    std::vector<DecideFn> out;
    for (int k = 0; k < 64; ++k) {
      const int i = (k * 7919) % n;
      const std::string hit = absl::StrCat("/srv/project", i, "/data/sub/dir/file.txt");
      const std::string miss = absl::StrCat("/srv/project", i, "/other/file.txt");
      out.push_back([hit](const CompiledPolicy& p) { return p.DecidePath(hit); });
      out.push_back([miss](const CompiledPolicy& p) { return p.DecidePath(miss); });
    }
    return out;
  });
}

void BM_DecideCommand(benchmark::State& state) {
  RunDecisions(state, [](int n) {
    std::vector<DecideFn> out;
    for (int k = 0; k < 64; ++k) {
      const int i = (k * 7919) % n;
      const std::string hit = i % 2 ? absl::StrCat("/usr/bin/tool", i)
                                    : absl::StrCat("/opt/bin", i % 50, "/tool", i);
      const std::string miss = absl::StrCat("/usr/bin/missing", i);
      out.push_back([hit](const CompiledPolicy& p) { return p.DecideCommand(hit); });
      out.push_back([miss](const CompiledPolicy& p) { return p.DecideCommand(miss); });
    }
    return out;
  });
}

void BM_Compile(benchmark::State& state) {
  const leash::v1::Config config = MakePolicy(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    CompiledPolicy policy = CompiledPolicy::Compile(config);
    benchmark::DoNotOptimize(policy);
  }
}

BENCHMARK(BM_DecideNetwork)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_DecidePath)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_DecideCommand)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_Compile)->Arg(10)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace leash::engine

BENCHMARK_MAIN();
