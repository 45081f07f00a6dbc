// Decision-to-watcher latency of the live stream, through the real path: a sidecar's
// AsyncDecisionLog (log file write, then its datagram feed), leashd's DecisionFeed and
// DecisionHub, and a WatchDecisions watcher (ServeWatchDecisions, without the gRPC hop). Each
// record carries the time it was handed to the log; the watcher takes the difference.
//
//   bazel run -c opt //test/leashd:decision_stream_latency -- [rate_per_second] [seconds]
//
// Prints p50/p99/max in microseconds for each rate (default: 1,000 and 10,000 a second, 5 s).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "controlplane/decision_feed.h"
#include "controlplane/decision_hub.h"
#include "controlplane/watch_decisions.h"
#include "proto/sidecar/decision_log.h"
#include "test/fixtures/sample_stats.h"

namespace leash::controlplane {
namespace {

int Measure(int rate, int seconds) {
  char dir_template[] = "/tmp/leash-stream-latency-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string path = absl::StrCat(dir_template, "/decisions.jsonl");
  DecisionHub hub([](uint32_t) { return std::string("leash-bench"); });
  absl::StatusOr<std::unique_ptr<DecisionFeed>> feed = DecisionFeed::Start(&hub);
  if (!feed.ok()) return 1;
  WatchDecisionsDeps deps;
  deps.hub = &hub;
  deps.account_of = [&hub](uint32_t uid) { return hub.AccountOf(uid); };
  leash::v1::WatchDecisionsRequest request;
  request.set_follow(true);
  std::mutex mu;
  std::vector<double> micros;
  uint64_t dropped = 0;
  std::atomic<bool> stop{false};
  absl::Notification subscribed;
  std::thread watcher([&] {
    ServeWatchDecisions(
        request, deps, [&] { return stop.load(); },
        [&](const leash::v1::WatchDecisionsEvent& event) {
          const int64_t now = absl::GetCurrentTimeNanos();
          if (event.live()) subscribed.Notify();
          std::lock_guard<std::mutex> lock(mu);
          dropped += event.dropped();
          int64_t sent = 0;
          if (!event.line().empty() && absl::SimpleAtoi(event.record().reason(), &sent)) {
            micros.push_back(static_cast<double>(now - sent) / 1000.0);
          }
          return true;
        })
        .IgnoreError();
  });
  subscribed.WaitForNotification();
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  auto log = std::make_unique<sidecar::AsyncDecisionLog>(fd);
  absl::StatusOr<int> end = (*feed)->NewWriterEnd();
  if (!end.ok()) return 1;
  log->AttachFeed(*end);
  const absl::Time start = absl::Now();
  int n = 0;
  for (int ms = 0; ms < seconds * 1000; ++ms) {
    const int due = static_cast<int>(int64_t{ms + 1} * rate / 1000);
    while (n < due) {
      leash::v1::DecisionRecord record;
      record.set_ts(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()));
      record.set_ref(absl::StrCat("b", n++));
      record.set_uid(3000);
      record.set_surface("network");
      record.set_action("block");
      record.set_reason(absl::StrCat(absl::GetCurrentTimeNanos()));
      log->Record(std::move(record));
    }
    const absl::Time next = start + absl::Milliseconds(ms + 1);
    if (absl::Now() < next) absl::SleepFor(next - absl::Now());
  }
  log->Flush();
  absl::SleepFor(absl::Milliseconds(500));
  stop = true;
  watcher.join();
  const uint64_t lost = log->lost(), feed_dropped = log->feed_dropped();
  log.reset();
  unlink(path.c_str());
  rmdir(dir_template);
  std::lock_guard<std::mutex> lock(mu);
  std::printf("rate %d/s for %d s: %zu of %d received; p50 %.0f us, p99 %.0f us, max %.0f us "
              "(log lost %llu, feed dropped %llu, watcher dropped %llu)\n",
              rate, seconds, micros.size(), n, leash::testing::Percentile(micros, 0.50),
              leash::testing::Percentile(micros, 0.99), leash::testing::Percentile(micros, 1.0),
              static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(feed_dropped),
              static_cast<unsigned long long>(dropped));
  return 0;
}

}  // namespace
}  // namespace leash::controlplane

int main(int argc, char** argv) {
  int seconds = 5;
  std::vector<int> rates = {1000, 10000};
  if (argc > 1) {
    int rate = 0;
    if (!absl::SimpleAtoi(argv[1], &rate) || rate <= 0) {
      std::fprintf(stderr, "usage: decision_stream_latency [rate_per_second] [seconds]\n");
      return 2;
    }
    rates = {rate};
  }
  if (argc > 2 && (!absl::SimpleAtoi(argv[2], &seconds) || seconds <= 0)) {
    std::fprintf(stderr, "usage: decision_stream_latency [rate_per_second] [seconds]\n");
    return 2;
  }
  for (int rate : rates) {
    if (leash::controlplane::Measure(rate, seconds) != 0) return 1;
  }
  return 0;
}
