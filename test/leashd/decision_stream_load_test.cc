// The decision stream under load: two writers as the sidecars have them (AsyncDecisionLog on
// the log file, each with its own datagram feed to leashd's DecisionFeed), 5,000 decisions a
// second each for 2 s, while a watcher (ServeWatchDecisions) is stalled for the whole run.
// What must hold is correctness, not speed: the writers finish their schedule at all (a
// writer that waited on the watcher would never finish: the watcher is released only after
// them), the log file has every record, and every line is accounted for — reached leashd or
// counted as dropped by its writer, reached the watcher or told to it as dropped.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "controlplane/decision_feed.h"
#include "controlplane/decision_hub.h"
#include "controlplane/watch_decisions.h"
#include "gtest/gtest.h"
#include "proto/sidecar/decision_log.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::controlplane {
namespace {

constexpr int kWriters = 2;
constexpr int kPerSecondEach = 5000;
constexpr int kSeconds = 2;

leash::v1::DecisionRecord Record(int writer, int n) {
  leash::v1::DecisionRecord record;
  record.set_ts(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()));
  record.set_ref(absl::StrCat("w", writer, "n", n));
  record.set_uid(2000 + writer);
  record.set_surface(writer == 0 ? "network" : "filesystem");
  record.set_action("block");
  record.set_reason("not in the allow list (whitelist)");
  record.mutable_subject()->set_path(absl::StrCat("/load/", n));
  return record;
}

size_t LinesIn(const std::string& path) {
  const std::string text = leash::testing::ReadAll(path);
  return std::count(text.begin(), text.end(), '\n');
}

TEST(DecisionStreamLoadTest, WritersAreNeverHeldUpAndEveryLineIsAccountedFor) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/load.jsonl");
  DecisionHub hub([](uint32_t uid) { return absl::StrCat("leash-load", uid); });
  absl::StatusOr<std::unique_ptr<DecisionFeed>> feed = DecisionFeed::Start(&hub);
  ASSERT_TRUE(feed.ok()) << feed.status();

  // The watcher: follows everything, and stalls on its first live line until the writers end.
  WatchDecisionsDeps deps;
  deps.hub = &hub;
  deps.account_of = [&hub](uint32_t uid) { return hub.AccountOf(uid); };
  leash::v1::WatchDecisionsRequest request;
  request.set_follow(true);
  absl::Notification writers_done, subscribed;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> received{0}, told_dropped{0};
  std::thread watcher([&] {
    ServeWatchDecisions(
        request, deps, [&] { return stop.load(); },
        [&](const leash::v1::WatchDecisionsEvent& event) {
          if (event.live()) subscribed.Notify();
          if (!event.line().empty()) {
            writers_done.WaitForNotification();
            received.fetch_add(1);
          }
          told_dropped.fetch_add(event.dropped());
          return true;
        })
        .IgnoreError();
  });
  subscribed.WaitForNotification();

  std::vector<std::unique_ptr<sidecar::AsyncDecisionLog>> logs;
  for (int w = 0; w < kWriters; ++w) {
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    ASSERT_GE(fd, 0);
    logs.push_back(std::make_unique<sidecar::AsyncDecisionLog>(fd));
    absl::StatusOr<int> end = (*feed)->NewWriterEnd();
    ASSERT_TRUE(end.ok()) << end.status();
    logs.back()->AttachFeed(*end);
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      // Paced: each millisecond its share, as a steady stream of decisions arrives.
      const absl::Time start = absl::Now();
      int n = 0;
      for (int ms = 0; ms < kSeconds * 1000; ++ms) {
        const int due = (ms + 1) * kPerSecondEach / 1000;
        while (n < due) logs[w]->Record(Record(w, n++));
        const absl::Time next = start + absl::Milliseconds(ms + 1);
        if (absl::Now() < next) absl::SleepFor(next - absl::Now());
      }
    });
  }
  for (std::thread& t : writers) t.join();
  uint64_t lost = 0, feed_dropped = 0;
  for (auto& log : logs) log->Flush();
  for (auto& log : logs) {
    lost += log->lost();
    feed_dropped += log->feed_dropped();
  }
  logs.clear();  // stops each writer: its last report of dropped feed lines is written now
  writers_done.Notify();

  // The log file: every record (or its loss, counted and reported).
  const uint64_t total = uint64_t{kWriters} * kPerSecondEach * kSeconds;
  const size_t in_file = LinesIn(path);
  EXPECT_GE(in_file + lost, total);
  // Every line of the file reached leashd or was counted as dropped by its writer (the
  // writers' final reports can only add to the file, never go missing from both).
  ASSERT_TRUE(leash::testing::WaitFor(
      [&] { return hub.published() + feed_dropped >= in_file - kWriters; }, absl::Seconds(30)))
      << "published " << hub.published() << " dropped " << feed_dropped << " in file "
      << in_file;
  EXPECT_EQ(hub.unreadable(), 0u);
  // The watcher was stalled through the whole run: it lost lines, and was told how many; what
  // it received and what it was told it lost add up to every line leashd received.
  ASSERT_TRUE(leash::testing::WaitFor(
      [&] { return received.load() + told_dropped.load() >= hub.published(); },
      absl::Seconds(60)))
      << "received " << received.load() << " told " << told_dropped.load() << " published "
      << hub.published();
  EXPECT_EQ(received.load() + told_dropped.load(), hub.published());
  EXPECT_GT(told_dropped.load(), 0u);
  stop = true;
  watcher.join();
}

}  // namespace
}  // namespace leash::controlplane
