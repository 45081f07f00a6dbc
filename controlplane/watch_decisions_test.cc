// ServeWatchDecisions: the replay starts where the watcher asked (a ref, a time, the last N),
// the live lines follow once, a line both in the file and in flight is sent once, and a
// watcher that does not keep up is told what it lost.
#include "controlplane/watch_decisions.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Line(const std::string& ref, const std::string& ts, const std::string& action) {
  return absl::StrCat(R"({"ts":")", ts, R"(","ref":")", ref,
                      R"(","uid":1001,"surface":"tools","action":")", action,
                      R"(","reason":"x","subject":{"name":"shell"}})");
}

std::string WriteLog(const std::string& name, const std::vector<std::string>& lines) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& line : lines) out << line << "\n";
  return path;
}

const std::vector<std::string> kLog = {
    Line("r1", "2026-12-02T10:00:00Z", "allow"), Line("r2", "2026-12-02T10:01:00Z", "block"),
    Line("r3", "2026-12-02T10:02:00Z", "allow"), Line("r4", "2026-12-02T10:03:00Z", "block")};

struct Watched {
  absl::Status status;
  std::vector<std::string> refs;
  std::vector<std::string> notices;
  uint64_t dropped = 0;
  bool live = false;
};

Watched Replay(const leash::v1::WatchDecisionsRequest& request, const std::string& path) {
  WatchDecisionsDeps deps;
  deps.log_path = path;
  deps.account_of = [](uint32_t) { return std::string("leash-a"); };
  Watched watched;
  watched.status = ServeWatchDecisions(
      request, deps, [] { return false; }, [&](const leash::v1::WatchDecisionsEvent& event) {
        if (!event.line().empty()) watched.refs.push_back(event.record().ref());
        if (!event.notice().empty()) watched.notices.push_back(event.notice());
        return true;
      });
  return watched;
}

TEST(WatchDecisionsTest, ReplaysFromARefATimeOrTheTail) {
  const std::string path = WriteLog("replay.jsonl", kLog);
  leash::v1::WatchDecisionsRequest request;
  request.set_ref("r2");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r2", "r3", "r4"));
  request.set_action("block");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r2", "r4"));
  request.Clear();
  request.set_since("2026-12-02T10:01:30Z");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r3", "r4"));
  request.set_until("2026-12-02T10:02:00Z");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r3"));
  request.Clear();
  request.set_tail(2);
  request.set_action("allow");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r1", "r3"));
  request.Clear();
  EXPECT_TRUE(Replay(request, path).refs.empty());  // no start point, no tail: nothing
}

TEST(WatchDecisionsTest, RefusesAMissingRefAndAMissingFile) {
  const std::string path = WriteLog("missing_ref.jsonl", kLog);
  leash::v1::WatchDecisionsRequest request;
  request.set_ref("nope");
  Watched watched = Replay(request, path);
  EXPECT_EQ(watched.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(watched.status.message(), HasSubstr("ref nope"));
  request.set_ref("r1");
  EXPECT_FALSE(Replay(request, path + ".gone").status.ok());
  EXPECT_EQ(Replay(request, "").status.code(), absl::StatusCode::kFailedPrecondition);
}

// An account filter naming no subject would match nothing: said, not an empty success.
TEST(WatchDecisionsTest, RefusesAnAccountThatIsNoSubject) {
  const std::string path = WriteLog("account.jsonl", kLog);
  WatchDecisionsDeps deps;
  deps.log_path = path;
  deps.account_of = [](uint32_t) { return std::string("leash-a"); };
  deps.is_subject = [](const std::string& account) { return account == "leash-a"; };
  std::vector<std::string> refs;
  const auto write = [&](const leash::v1::WatchDecisionsEvent& event) {
    if (!event.line().empty()) refs.push_back(event.record().ref());
    return true;
  };
  leash::v1::WatchDecisionsRequest request;
  request.set_tail(2);
  request.set_account("leash-a");
  EXPECT_TRUE(ServeWatchDecisions(request, deps, [] { return false; }, write).ok());
  EXPECT_THAT(refs, ElementsAre("r3", "r4"));
  request.set_account("leash-typo");
  const absl::Status status = ServeWatchDecisions(request, deps, [] { return false; }, write);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("no subject of leashd is named 'leash-typo'"));
}

// Follow: the replay, then the live lines; one already replayed is not sent again; a watcher
// that cannot keep up is told how many it lost.
TEST(WatchDecisionsTest, FollowsAfterTheReplayOnce) {
  const std::string recent = absl::FormatTime(absl::RFC3339_full, absl::Now(), absl::UTCTimeZone());
  std::vector<std::string> lines = kLog;
  lines.push_back(Line("r5", recent, "block"));
  const std::string path = WriteLog("follow.jsonl", lines);
  DecisionHub hub([](uint32_t) { return std::string("leash-a"); }, /*capacity=*/10);
  WatchDecisionsDeps deps;
  deps.hub = &hub;
  deps.log_path = path;
  deps.account_of = [&hub](uint32_t uid) { return hub.AccountOf(uid); };
  leash::v1::WatchDecisionsRequest request;
  request.set_follow(true);
  request.set_ref("r4");
  request.set_action("block");

  absl::Notification live, release, done;
  std::atomic<bool> stop{false};
  Watched watched;
  std::thread watcher([&] {
    watched.status = ServeWatchDecisions(
        request, deps, [&] { return stop.load(); },
        [&](const leash::v1::WatchDecisionsEvent& event) {
          if (event.live()) {
            watched.live = true;
            live.Notify();
            release.WaitForNotification();  // a watcher that stalls
          }
          if (!event.line().empty()) watched.refs.push_back(event.record().ref());
          watched.dropped += event.dropped();
          if (event.record().ref() == "r-last") done.Notify();
          return true;
        });
  });
  live.WaitForNotification();
  hub.Publish(Line("r5", recent, "block"));  // was in flight while the file was read
  hub.Publish(Line("r6", recent, "allow"));  // not asked for
  for (int i = 0; i < 30; ++i) hub.Publish(Line(absl::StrCat("x", i), recent, "block"));
  release.Notify();
  // Once the stall is over the queue drains; the next line arrives.
  absl::SleepFor(absl::Milliseconds(600));
  hub.Publish(Line("r-last", recent, "block"));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  stop = true;
  watcher.join();
  EXPECT_TRUE(watched.status.ok()) << watched.status;
  EXPECT_TRUE(watched.live);
  ASSERT_GE(watched.refs.size(), 3u);
  EXPECT_EQ(watched.refs[0], "r4");
  EXPECT_EQ(watched.refs[1], "r5");
  EXPECT_EQ(std::count(watched.refs.begin(), watched.refs.end(), "r5"), 1);
  EXPECT_EQ(std::count(watched.refs.begin(), watched.refs.end(), "r6"), 0);
  EXPECT_EQ(watched.refs.back(), "r-last");
  // 31 matching lines against a queue of 10 while the watcher stalled.
  EXPECT_EQ(watched.dropped, 21u);
  EXPECT_EQ(watched.refs.size(), 2u + 10u + 1u - 1u);  // r4, r5(file); 10 queued minus r5 live copy; r-last
}

// logrotate's rotations of the log (packaging/logrotate.d/leash: copytruncate, compress,
// delaycompress): the newest rotation `.1` plain, older ones gzip.
void WriteGzip(const std::string& path, const std::vector<std::string>& lines) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  for (const std::string& line : lines) {
    const std::string text = line + "\n";
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
  }
  ASSERT_EQ(gzclose(gz), Z_OK);
}

// Three weeks of a rotated log: .2.gz (r1..r3), .1 (r4..r6), the log (r7..r9).
std::string WriteRotatedLog(const std::string& name) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  WriteGzip(path + ".2.gz", {Line("r1", "2026-11-15T10:00:00Z", "allow"),
                             Line("r2", "2026-11-16T10:00:00Z", "block"),
                             Line("r3", "2026-11-17T10:00:00Z", "allow")});
  WriteLog(name + ".1", {Line("r4", "2026-11-22T10:00:00Z", "block"),
                         Line("r5", "2026-11-23T10:00:00Z", "allow"),
                         Line("r6", "2026-11-24T10:00:00Z", "block")});
  WriteLog(name, {Line("r7", "2026-11-29T10:00:00Z", "allow"),
                  Line("r8", "2026-11-30T10:00:00Z", "block"),
                  Line("r9", "2026-12-01T10:00:00Z", "allow")});
  return path;
}

// A start point before the last rotation replays from the rotated file on into the log: each
// line once, in order, none missing at either boundary.
TEST(WatchDecisionsTest, ReplaysAcrossTheRotatedFiles) {
  const std::string path = WriteRotatedLog("rotated.jsonl");
  leash::v1::WatchDecisionsRequest request;
  request.set_ref("r5");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r5", "r6", "r7", "r8", "r9"));
  request.set_ref("r2");  // in the compressed one
  EXPECT_THAT(Replay(request, path).refs,
              ElementsAre("r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"));
  request.set_ref("r8");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r8", "r9"));
  request.Clear();
  request.set_since("2026-11-23T00:00:00Z");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r5", "r6", "r7", "r8", "r9"));
  request.set_since("2026-11-16T00:00:00Z");
  request.set_action("block");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r2", "r4", "r6", "r8"));
  request.Clear();
  request.set_since("2026-11-01T00:00:00Z");  // before everything: from the oldest
  EXPECT_EQ(Replay(request, path).refs.size(), 9u);
  request.Clear();
  request.set_tail(4);
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r6", "r7", "r8", "r9"));
  request.set_tail(7);
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r3", "r4", "r5", "r6", "r7", "r8", "r9"));
}

// Right after a rotation nothing may have been written yet: the rotated file still replays.
TEST(WatchDecisionsTest, ReplaysTheRotationWhenTheLogIsGone) {
  const std::string path = WriteRotatedLog("rotated_gone.jsonl");
  ASSERT_EQ(unlink(path.c_str()), 0);
  leash::v1::WatchDecisionsRequest request;
  request.set_ref("r5");
  EXPECT_THAT(Replay(request, path).refs, ElementsAre("r5", "r6"));
}

// A damaged compressed rotation is refused, naming it, not read as if it were whole.
TEST(WatchDecisionsTest, ADamagedCompressedRotationIsAnError) {
  const std::string path = WriteRotatedLog("rotated_cut.jsonl");
  std::vector<std::string> many;
  for (int i = 0; i < 5000; ++i) {
    many.push_back(Line(absl::StrCat("old", i), "2026-11-10T10:00:00Z", "allow"));
  }
  WriteGzip(path + ".3.gz", many);
  ASSERT_EQ(truncate((path + ".3.gz").c_str(), 300), 0);
  leash::v1::WatchDecisionsRequest request;
  request.set_since("2026-11-01T00:00:00Z");
  const Watched watched = Replay(request, path);
  EXPECT_FALSE(watched.status.ok());
  EXPECT_THAT(watched.status.message(), HasSubstr(path + ".3.gz"));
}

}  // namespace
}  // namespace leash::controlplane
