// Measures what a dead or stopped watcher costs the host, through the real leashd and its real
// watchers (docs/PERFORMANCE.md): each round an agent loops opening a file its policy denies
// while the reading watcher is SIGKILLed or SIGSTOPped, and root (not a subject) loops opening
// an allowed file on the same marked tmpfs. Printed per fault: the agent's opens that
// succeeded (must be 0), and the longest any one of root's opens waited (the stall the host
// sees until leashd hands the group to the standby), as median / p90 / max over the rounds.
//
//   bazel run -c opt //test/leashd:watcher_fault_windows -- --rounds=10
//
// Root. leashd gives up after more than 3 deaths of a sidecar in 10 minutes, so it is started
// afresh every 3 rounds.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
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
#include "test/fswatch/harness.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

constexpr int kDeathsPerLeashd = 3;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The pid of the ready standby leashd's log names last, other than `not_this` (0: none yet).
pid_t ReadyStandby(const std::string& log, pid_t not_this) {
  constexpr char kPrefix[] = "leash-fswatch standby (pid ";
  pid_t ready = 0;
  for (size_t at = log.find(kPrefix); at != std::string::npos; at = log.find(kPrefix, at + 1)) {
    const size_t digits = at + strlen(kPrefix);
    const size_t close = log.find(") ready", digits);
    pid_t pid = 0;
    if (close != std::string::npos && close - digits < 10 &&
        absl::SimpleAtoi(log.substr(digits, close - digits), &pid) && pid != not_this) {
      ready = pid;
    }
  }
  return ready;
}

// The reading watcher's pid as leashd reports it (0: none).
pid_t WatcherPid(LeashdInstance& leashd) {
  absl::StatusOr<leash::v1::StatusResponse> status = leashd.Status();
  if (!status.ok()) return 0;
  for (const auto& sidecar : status->sidecars()) {
    if (sidecar.name() == "leash-fswatch" && sidecar.running()) {
      return static_cast<pid_t>(sidecar.pid());
    }
  }
  return 0;
}

struct Round {
  long denied_successes = -1;  // -1: the agent's loop printed nothing
  long denied_attempts = 0;
  double root_max_wait_ms = 0;
};

int Main(int argc, char** argv) {
  int rounds = 10;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--rounds=") && absl::SimpleAtoi(arg, &rounds) && rounds > 0) {
      continue;
    }
    fprintf(stderr, "usage: watcher_fault_windows [--rounds=N]\n");
    return 2;
  }
  if (geteuid() != 0) {
    fprintf(stderr, "watcher_fault_windows needs root (namespaces, accounts, tmpfs, fanotify)\n");
    return 1;
  }
  absl::StatusOr<std::unique_ptr<NetNamespace>> ns = NetNamespace::Create();
  absl::StatusOr<std::unique_ptr<TmpfsMount>> fs = TmpfsMount::Create();
  const std::string suffix = std::to_string(getpid() % 100000);
  absl::StatusOr<std::unique_ptr<TestAccount>> user = TestAccount::Create("lwf-user" + suffix);
  absl::StatusOr<std::unique_ptr<TestAccount>> agent = TestAccount::Create("leash-wf" + suffix);
  absl::StatusOr<std::unique_ptr<ProbeDir>> probe = ProbeDir::Create();
  absl::StatusOr<std::unique_ptr<TempDir>> log_dir = TempDir::Create("lwf-log");
  for (const absl::Status& s : {ns.status(), fs.status(), user.status(), agent.status(),
                                probe.status(), log_dir.status()}) {
    if (!s.ok()) {
      fprintf(stderr, "setup: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  chmod((*log_dir)->path().c_str(), 0755);
  const std::string root = (*fs)->path();
  mkdir((root + "/secret").c_str(), 0755);
  std::ofstream(root + "/secret/x") << "x";
  std::ofstream(root + "/open.txt") << "o";
  chmod((root + "/secret/x").c_str(), 0644);
  chmod((root + "/open.txt").c_str(), 0644);
  const std::string floor = absl::StrCat(
      "user: ", (*user)->name(), "\nfail_mode: closed\n",
      "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
      "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/secret\"] }\n",
      "commands: { mode: blacklist, allow: [], deny: [] }\n",
      "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
      "logging: { level: info, decisions: ", (*log_dir)->Join("decisions.jsonl"), " }\n");

  std::unique_ptr<LeashdInstance> leashd;
  int deaths = kDeathsPerLeashd;
  pid_t last_standby = 0;
  printf("fault  round  denied_attempts  denied_successes  root_max_wait_ms\n");
  for (const int fault : {SIGKILL, SIGSTOP}) {
    const char* name = fault == SIGKILL ? "SIGKILL" : "SIGSTOP";
    std::vector<double> waits;
    long successes = 0, attempts = 0;
    for (int round = 1; round <= rounds; ++round) {
      if (deaths >= kDeathsPerLeashd) {
        leashd.reset();
        absl::StatusOr<std::unique_ptr<LeashdInstance>> started =
            LeashdInstance::Start(floor, **ns, root);
        if (!started.ok()) {
          fprintf(stderr, "leashd: %s\n", std::string(started.status().message()).c_str());
          return 1;
        }
        leashd = *std::move(started);
        deaths = 0;
        last_standby = 0;
      }
      // The standby that will take over is ready, and the reader is not it.
      pid_t standby = 0;
      WaitFor([&] { return (standby = ReadyStandby(leashd->Log(), last_standby)) != 0; },
              absl::Seconds(30));
      const pid_t reader = WatcherPid(*leashd);
      if (standby == 0 || reader == 0 || reader == standby) {
        fprintf(stderr, "no reader and ready standby:\n%s\n", leashd->Log().c_str());
        return 1;
      }
      last_standby = standby;

      const std::string out = absl::StrCat((*log_dir)->path(), "/storm-", name, round);
      absl::StatusOr<Background> storm = Background::Start(
          (*agent)->AsUser({(*probe)->probe(), "storm-for", root + "/secret/x", "4000"}), out);
      std::atomic<bool> stop{false};
      std::atomic<int64_t> max_wait_ns{0};
      std::thread opener([&] {
        const std::string path = root + "/open.txt";
        while (!stop.load()) {
          const int64_t start = NowNs();
          const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
          const int64_t took = NowNs() - start;
          if (fd >= 0) close(fd);
          if (took > max_wait_ns.load()) max_wait_ns.store(took);
          usleep(200);
        }
      });
      absl::SleepFor(absl::Milliseconds(1000));
      kill(reader, fault);
      if (storm.ok()) storm->Wait(absl::Seconds(60)).IgnoreError();
      // Root's loop runs until the standby reads the group and a little after.
      WaitFor([&] { return WatcherPid(*leashd) == standby; }, absl::Seconds(30));
      absl::SleepFor(absl::Milliseconds(200));
      stop.store(true);
      opener.join();
      ++deaths;

      Round result;
      std::vector<std::string> words =
          absl::StrSplit(absl::StripAsciiWhitespace(ReadFileOrEmpty(out)), ' ');
      if (words.size() == 4 && words[0] == "ok") {
        absl::SimpleAtoi(words[1], &result.denied_attempts);
        absl::SimpleAtoi(words[3], &result.denied_successes);
      }
      result.root_max_wait_ms = max_wait_ns.load() / 1e6;
      printf("%-6s %5d  %15ld  %16ld  %16.1f\n", name, round, result.denied_attempts,
             result.denied_successes, result.root_max_wait_ms);
      fflush(stdout);
      if (result.denied_successes == -1) {
        fprintf(stderr, "the agent's loop printed nothing: %s\n", ReadFileOrEmpty(out).c_str());
        return 1;
      }
      successes += result.denied_successes;
      attempts += result.denied_attempts;
      waits.push_back(result.root_max_wait_ms);
    }
    printf("%s: %d rounds, %ld denied opens tried, %ld succeeded; root's longest open wait "
           "median %.0f ms, p90 %.0f ms, max %.0f ms\n",
           name, rounds, attempts, successes, Median(waits), Percentile(waits, 0.9),
           Percentile(waits, 1.0));
    fflush(stdout);
  }
  leashd.reset();
  return 0;
}

}  // namespace
}  // namespace leash::testing

int main(int argc, char** argv) { return leash::testing::Main(argc, argv); }
