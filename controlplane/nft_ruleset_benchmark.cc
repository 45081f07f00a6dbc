// Userspace cost of building the netlink batch the nft applier sends (no kernel involved):
// a 1,000-subject startup batch and a one-subject batch.
//   bazel run -c opt //controlplane:nft_ruleset_benchmark
#include <vector>

#include "benchmark/benchmark.h"
#include "controlplane/nft_ruleset.h"
#include "controlplane/testing/fake_netfilter.h"

namespace leash::controlplane::nft {
namespace {

void BM_BuildApplyBatch(benchmark::State& state) {
  std::vector<NetfilterSubject> subjects;
  for (int i = 0; i < state.range(0); ++i) {
    subjects.push_back(testing::MakeSubject(200000 + i, static_cast<uint16_t>(18000 + i % 1000),
                                            false, {*engine::ParseIpAddress("192.0.2.53")}));
  }
  size_t bytes = 0;
  for (auto _ : state) {
    NftBatch batch(1);
    for (const LeashTable& table : LeashTables()) ApplySubjects(batch, table, subjects, {}, {});
    bytes = batch.Finish().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["per_subject_ns"] = benchmark::Counter(
      static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate |
                                               benchmark::Counter::kInvert);
}
BENCHMARK(BM_BuildApplyBatch)->Arg(1)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace leash::controlplane::nft
