// The watcher's cost per logged file line with and without the acting process: the line as
// Watcher::LogLine renders it (engine::AppendDecisionLine), and with the process the /proc
// reads (LinuxProcessFacts) and the masked, bounded command line (engine::LoggedCmdline) before
// it. The process read is this benchmark's own (alive, a real /proc). Prints the ratio of the
// two from the same run.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "engine/decision_record.h"
#include "engine/detectors.h"
#include "engine/process_cmdline.h"
#include "fswatch/process_facts_linux.h"

namespace leash::fswatch {
namespace {

const tools::Inspector& TheInspector() {
  static const tools::Inspector* inspector = tools::Inspector::Create()->release();
  return *inspector;
}

void BM_LoggedFileLine(benchmark::State& state) {
  const bool with_process = state.range(0) != 0;
  const LinuxProcessFacts facts;
  const tools::Inspector& inspector = TheInspector();
  const pid_t pid = getpid();
  std::string line;
  for (auto _ : state) {
    line.clear();
    engine::FileDecisionFields fields;
    fields.ts = "2026-11-30T01:02:03.123456Z";
    fields.ref = "k3x9q2mw";
    fields.uid = 1001;
    fields.account = "leash-iris";
    fields.verdict = engine::Verdict::kBlock;
    fields.path = "/home/other/.ssh/id_ed25519";
    engine::ProcessFields process;
    std::string cmdline;
    RawProcess raw;
    if (with_process) {
      raw = facts.Read(pid);
      process.pid = static_cast<uint32_t>(pid);
      process.ppid = raw.ppid.value_or(0);
      process.exe = raw.exe;
      cmdline = engine::LoggedCmdline(raw.cmdline, inspector);
      process.cmdline = cmdline;
      fields.process = &process;
    }
    engine::AppendDecisionLine(
        fields, [](std::string& out) { out += "filesystem: not in allow list"; }, line);
    benchmark::DoNotOptimize(line);
  }
}
BENCHMARK(BM_LoggedFileLine)->Arg(0)->Arg(1)->UseRealTime();

// Keeps each run's time per iteration, to print the ratio after.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration) {
        times_[run.benchmark_name()].push_back(run.GetAdjustedRealTime());
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // The median of `name`'s repetitions.
  double Median(const std::string& name) {
    std::vector<double> v = times_[name];
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> times_;
};

}  // namespace
}  // namespace leash::fswatch

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  leash::fswatch::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double without = reporter.Median("BM_LoggedFileLine/0/real_time");
  const double with = reporter.Median("BM_LoggedFileLine/1/real_time");
  if (without > 0) {
    std::printf("logged file line: %.0f ns with the process, %.0f ns without: ratio %.1f\n", with,
                without, with / without);
  }
  benchmark::Shutdown();
  return 0;
}
