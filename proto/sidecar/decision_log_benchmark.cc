// What one decision record costs the process that logs it, on both sides of the queue: the
// producer (the deciding thread: the fanotify loop, a proxy worker) and the writer thread that
// renders the line and writes it. The writer's share matters on a small host because it runs
// on a core the openers or the loop also need.
//
//   bazel run -c opt //proto/sidecar:decision_log_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Counters: producer_ns and writer_ns are CPU nanoseconds per record (thread CPU clocks);
// lost must be 0 (the producer waits for the writer every half ring).
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "proto/sidecar/decision_log.h"
#include "engine/compiled_policy.h"
#include "engine/decision_record.h"

namespace leash::sidecar {
namespace {

int64_t CpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A record as the watcher renders one (fswatch/watcher.cc Log) for an allowed open: the
// fields as views, the reason appended from the policy's ruling straight into the line, the
// account as the log names it (`account` empty: the line without one, the baseline).
void AppendLine(std::string& out, int n, absl::string_view account) {
  static const std::string path = "/home/agent/work/project/src/module/file_0123.cc";
  engine::Ruling ruling;
  ruling.verdict = engine::Verdict::kAllow;
  ruling.basis = engine::Ruling::Basis::kAllowEntry;
  ruling.entry = "/home/agent/work/project";
  engine::FileDecisionFields fields;
  fields.ts = "2026-11-30T01:02:03.123456Z";
  fields.ref = "k3x9q2mw";
  fields.uid = 1001 + n % 3;
  fields.account = account;
  fields.surface = leash::v1::SURFACE_FILESYSTEM;
  fields.verdict = ruling.verdict;
  fields.path = path;
  engine::AppendDecisionLine(
      fields,
      [&](std::string& reason) {
        engine::AppendReason(leash::v1::SURFACE_FILESYSTEM, path, ruling, reason);
      },
      out);
}

void BM_RecordLine(benchmark::State& state) {
  const std::string file = absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp",
                                        "/decision_log_benchmark.jsonl");
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    state.SkipWithError("cannot open the log file");
    return;
  }
  AsyncDecisionLog log(fd);  // 8,192 slots, reused lap after lap as in a sidecar
  // Arg 1: the account named per line as the watcher names it (AccountOf, a reader lock and a
  // lookup); arg 0: no account, the same run's baseline.
  const bool named = state.range(0) != 0;
  log.SetAccounts({{1001, "leash-iris"}, {1002, "leash-vader"}, {1003, "leash-quill"}});
  const int64_t process_start = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
  const int64_t producer_start = CpuNs(CLOCK_THREAD_CPUTIME_ID);
  int64_t records = 0;
  for (auto _ : state) {
    const std::string account = named ? log.AccountOf(1001 + records % 3) : std::string();
    log.RecordLine([&](std::string& line) { AppendLine(line, records, account); });
    ++records;
    if (records % 4096 == 0) log.Flush();  // half a ring at a time: nothing is lost
  }
  log.Flush();
  const int64_t producer = CpuNs(CLOCK_THREAD_CPUTIME_ID) - producer_start;
  const int64_t process = CpuNs(CLOCK_PROCESS_CPUTIME_ID) - process_start;
  state.counters["producer_ns"] = static_cast<double>(producer) / records;
  state.counters["writer_ns"] = static_cast<double>(process - producer) / records;
  state.counters["lost"] = static_cast<double>(log.lost());
  unlink(file.c_str());
}
BENCHMARK(BM_RecordLine)->Arg(0)->Arg(1)->Iterations(200000)->UseRealTime();

}  // namespace
}  // namespace leash::sidecar

BENCHMARK_MAIN();
