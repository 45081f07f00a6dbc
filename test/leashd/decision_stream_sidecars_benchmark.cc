// What a stalled Control.WatchDecisions watcher costs the sidecars' answers, through the real
// leashd, leash-fswatch and leash-proxy (docs/PERFORMANCE.md). Each round measures, with none
// attached and with a stalled watcher attached (one that reads nothing after its live mark, so
// leashd's hub parses every line for it and drops what its queue cannot hold), in an order
// that alternates between rounds:
//   - paced: an agent making --rate decisions a second for --seconds, half opens of a denied
//     file (answered by leash-fswatch), half connections to a denied address (answered by
//     leash-proxy): open and connect latency p50 / p99;
//   - flat out: one agent thread opening the denied file as fast as it can for --seconds:
//     opens a second (every one a block line, far above the paced rate).
// Printed: each round's figures (with the CPU time leashd used during the measurement, from
// /proc: the hub's work for a watcher), and the median over the rounds of the per-round ratios
// stalled / none with a 95 % distribution-free interval (test/fixtures/sample_stats.h). A ratio
// of 1 is "no sidecar answer delayed by the stream".
//
//   bazel run -c opt //test/leashd:decision_stream_sidecars_benchmark -- [--rounds=10]
//       [--seconds=5] [--rate=10000]
//
// Root.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/sample_stats.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"
#include "test/fixtures/test_account.h"
#include "test/fixtures/tmpfs.h"
#include "test/leashd/leashd_fixture.h"
#include "test/leashd/stalled_watcher.h"

namespace leash::testing {
namespace {

// The CPU time `pid` has used, user and system, in seconds.
double CpuSeconds(pid_t pid) {
  const std::string stat = ReadAll(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  // After the name: state is field 3 of stat(5), utime 14 and stime 15.
  double utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return 0;
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::map<std::string, double> Fields(const std::string& line) {
  std::map<std::string, double> fields;
  for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(word, absl::MaxSplits('=', 1));
    double value = 0;
    if (absl::SimpleAtod(kv.second, &value)) fields[kv.first] = value;
  }
  return fields;
}

// The figures of one measurement.
constexpr const char* kFigures[] = {"open_p50_us", "open_p99_us",   "connect_p50_us",
                                    "connect_p99_us", "open_per_s", "leashd_cpu_s"};

int Main(int argc, char** argv) {
  int rounds = 10, rate = 10000;
  double seconds = 5;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--rounds=") && absl::SimpleAtoi(arg, &rounds) && rounds > 0) {
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--seconds=") && absl::SimpleAtod(arg, &seconds) &&
        seconds > 0) {
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--rate=") && absl::SimpleAtoi(arg, &rate) && rate >= 2) {
      continue;
    }
    fprintf(stderr, "usage: decision_stream_sidecars_benchmark [--rounds=N] [--seconds=S] "
                    "[--rate=R]\n");
    return 2;
  }
  if (geteuid() != 0) {
    fprintf(stderr, "decision_stream_sidecars_benchmark needs root (namespaces, accounts, "
                    "tmpfs, fanotify)\n");
    return 1;
  }
  absl::StatusOr<std::unique_ptr<NetNamespace>> ns = NetNamespace::Create();
  absl::StatusOr<std::unique_ptr<TmpfsMount>> fs = TmpfsMount::Create();
  const std::string suffix = std::to_string(getpid() % 100000);
  absl::StatusOr<std::unique_ptr<TestAccount>> user = TestAccount::Create("ldb-user" + suffix);
  absl::StatusOr<std::unique_ptr<TestAccount>> agent = TestAccount::Create("leash-ldb" + suffix);
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("ldb");
  for (const absl::Status& s : {ns.status(), fs.status(), user.status(), agent.status(),
                                dir.status()}) {
    if (!s.ok()) {
      fprintf(stderr, "setup: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (absl::Status veth = (*ns)->AddVethPair({"192.0.2.10/24"}, {"192.0.2.11/24"}); !veth.ok()) {
    fprintf(stderr, "veth: %s\n", std::string(veth.message()).c_str());
    return 1;
  }
  chmod((*dir)->path().c_str(), 0755);
  const std::string root = (*fs)->path();
  mkdir((root + "/secret").c_str(), 0755);
  const std::string denied = root + "/secret/x";
  std::ofstream(denied) << "x";
  chmod(denied.c_str(), 0644);
  const std::string binary = (*dir)->Join("decision_load_agent");
  if (!RunOk({"cp", RunfilePath("test/leashd/decision_load_agent"), binary}).ok()) return 1;
  const std::string log = (*dir)->Join("decisions.jsonl");
  const std::string floor = absl::StrCat(
      "user: ", (*user)->name(), "\nfail_mode: closed\n",
      "network: { mode: whitelist, allow: [\"192.0.2.99/32\"], deny: [] }\n",
      "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/secret\"] }\n",
      "commands: { mode: blacklist, allow: [], deny: [] }\n",
      "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
      "logging: { level: info, decisions: ", log, " }\n");
  absl::StatusOr<std::unique_ptr<LeashdInstance>> leashd = LeashdInstance::Start(floor, **ns, root);
  if (!leashd.ok()) {
    fprintf(stderr, "leashd: %s\n", std::string(leashd.status().message()).c_str());
    return 1;
  }

  auto agent_run = [&](const std::vector<std::string>& args) -> std::map<std::string, double> {
    std::vector<std::string> argv = {binary, "--open=" + denied,
                                     absl::StrCat("--seconds=", seconds)};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RunResult> run =
        Run((*ns)->ExecSharingMounts((*agent)->AsUser(argv)), absl::Seconds(seconds * 10 + 60));
    if (!run.ok() || run->exit_code != 0) {
      fprintf(stderr, "agent: %s %s\n", std::string(run.status().message()).c_str(),
              run.ok() ? run->out.c_str() : "");
      return {};
    }
    return Fields(run->out);
  };
  // One measurement: the paced load, then the flat-out opens. The log is emptied first (the
  // sidecars append to it; a run writes hundreds of thousands of lines).
  auto measure = [&](bool stalled, uint64_t& told_dropped) -> std::map<std::string, double> {
    (void)!truncate(log.c_str(), 0);
    absl::SleepFor(absl::Milliseconds(500));
    std::unique_ptr<StalledWatcher> watcher;
    if (stalled) {
      absl::StatusOr<std::unique_ptr<StalledWatcher>> started =
          StalledWatcher::Start((*leashd)->admin_socket());
      if (!started.ok()) {
        fprintf(stderr, "watcher: %s\n", std::string(started.status().message()).c_str());
        return {};
      }
      watcher = *std::move(started);
    }
    const double cpu_before = CpuSeconds((*leashd)->pid());
    std::map<std::string, double> paced =
        agent_run({absl::StrCat("--open-rate=", rate / 2), "--connect=192.0.2.11",
                   "--ports=8000-8099", absl::StrCat("--connect-rate=", rate - rate / 2),
                   "--connect-threads=16"});
    std::map<std::string, double> flat = agent_run({"--open-rate=0"});
    if (paced.empty() || flat.empty()) return {};
    paced["open_per_s"] = flat["open_per_s"];
    paced["leashd_cpu_s"] = CpuSeconds((*leashd)->pid()) - cpu_before;
    if (watcher != nullptr) {
      // Reads again to learn what it lost (leashd tells it on its next read).
      watcher->Resume();
      WaitFor([&] { return watcher->quiet_us() > 1'000'000; }, absl::Seconds(60));
      told_dropped = watcher->told_dropped();
    }
    return paced;
  };

  std::map<std::string, std::vector<double>> none, stalled, ratio;
  printf("round  watcher  open_p50_us  open_p99_us  connect_p50_us  connect_p99_us  "
         "flat_out_opens_per_s  leashd_cpu_s  watcher_told_dropped\n");
  for (int round = 1; round <= rounds; ++round) {
    std::map<std::string, double> figures[2];
    for (int k = 0; k < 2; ++k) {
      // Odd rounds measure none first, even rounds the stalled watcher first.
      const bool with = (round % 2 == 1) == (k == 1);
      uint64_t dropped = 0;
      std::map<std::string, double> got = measure(with, dropped);
      if (got.empty()) return 1;
      printf("%5d  %-7s  %11.1f  %11.1f  %14.1f  %14.1f  %20.0f  %12.2f  %20llu\n", round,
             with ? "stalled" : "none", got["open_p50_us"], got["open_p99_us"],
             got["connect_p50_us"], got["connect_p99_us"], got["open_per_s"],
             got["leashd_cpu_s"], static_cast<unsigned long long>(dropped));
      fflush(stdout);
      if (with && dropped == 0) {
        fprintf(stderr, "round %d: the stalled watcher lost nothing: it did not stall\n", round);
      }
      figures[with ? 1 : 0] = std::move(got);
    }
    for (const char* figure : kFigures) {
      none[figure].push_back(figures[0][figure]);
      stalled[figure].push_back(figures[1][figure]);
      ratio[figure].push_back(figures[1][figure] / figures[0][figure]);
    }
  }
  printf("\nmedian of %d rounds (%.1f s each; paced at %d decisions a second, half opens, half "
         "connections): none / stalled watcher; per-round ratio stalled / none, median [95%% "
         "interval]\n",
         rounds, seconds, rate);
  for (const char* figure : kFigures) {
    const MedianInterval interval = MedianConfidenceInterval(ratio[figure], 0.95);
    printf("%-16s %12.1f / %12.1f   ratio %.3f", figure, Median(none[figure]),
           Median(stalled[figure]), Median(ratio[figure]));
    if (interval.valid) printf(" [%.3f, %.3f]", interval.low, interval.high);
    printf("\n");
  }
  printf("(latency: above 1 is slower with the watcher; opens a second: below 1 is slower)\n");
  return 0;
}

}  // namespace
}  // namespace leash::testing

int main(int argc, char** argv) { return leash::testing::Main(argc, argv); }
