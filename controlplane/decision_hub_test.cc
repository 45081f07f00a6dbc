// DecisionHub and DecisionFeed: a subscriber gets the lines its filter matches; a slow one
// loses lines, counted and told, and never holds up Publish; lines sent on a feed socket reach
// the hub whole.
#include "controlplane/decision_hub.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controlplane/decision_feed.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

std::string Line(int n, const std::string& action = "block", uint32_t uid = 1001) {
  return absl::StrCat(R"({"ts":"2026-12-02T10:00:00Z","ref":"r)", n, R"(","uid":)", uid,
                      R"(,"surface":"network","action":")", action, R"(","reason":"x"})");
}

std::string NameOf(uint32_t uid) { return uid == 1001 ? "leash-a" : ""; }

TEST(DecisionHubTest, DeliversWhatTheFilterMatches) {
  DecisionHub hub(NameOf);
  DecisionFilter blocks;
  blocks.action = "block";
  blocks.account = "leash-a";
  auto subscription = hub.Subscribe(blocks);
  hub.Publish(Line(1));
  hub.Publish(Line(2, "allow"));
  hub.Publish(Line(3, "block", 1002));
  hub.Publish("not a record");
  DecisionHub::Subscription::Batch batch = subscription->Take(absl::Seconds(1));
  ASSERT_EQ(batch.decisions.size(), 1u);
  EXPECT_EQ(batch.decisions[0]->record.ref(), "r1");
  EXPECT_EQ(batch.decisions[0]->account, "leash-a");
  EXPECT_EQ(batch.dropped, 0u);
  EXPECT_EQ(hub.published(), 4u);
  EXPECT_EQ(hub.unreadable(), 1u);
}

// A subscriber that never reads: Publish goes on at once, the queue keeps its bound, and the
// rest are counted, once, on the next Take.
TEST(DecisionHubTest, SlowSubscriberLosesCountedLines) {
  DecisionHub hub(NameOf, /*capacity=*/100);
  auto slow = hub.Subscribe(DecisionFilter());
  auto fast = hub.Subscribe(DecisionFilter());
  uint64_t fast_seen = 0;
  for (int i = 0; i < 1000; ++i) {
    hub.Publish(Line(i));
    if (i % 50 == 49) fast_seen += fast->Take(absl::ZeroDuration()).decisions.size();
  }
  fast_seen += fast->Take(absl::ZeroDuration()).decisions.size();
  EXPECT_EQ(fast_seen, 1000u);
  DecisionHub::Subscription::Batch batch = slow->Take(absl::ZeroDuration());
  EXPECT_EQ(batch.decisions.size(), 100u);
  EXPECT_EQ(batch.dropped, 900u);
  EXPECT_EQ(batch.decisions.front()->record.ref(), "r0");  // the oldest are kept
  EXPECT_EQ(slow->dropped_total(), 900u);
  EXPECT_EQ(slow->Take(absl::ZeroDuration()).dropped, 0u);  // told once
}

TEST(DecisionHubTest, AReleasedSubscriptionIsForgotten) {
  DecisionHub hub(NameOf);
  std::weak_ptr<DecisionHub::Subscription> weak;
  {
    auto subscription = hub.Subscribe(DecisionFilter());
    weak = subscription;
  }
  hub.Publish(Line(1));
  EXPECT_TRUE(weak.expired());
}

TEST(DecisionFeedTest, DatagramsReachTheHub) {
  DecisionHub hub(NameOf);
  auto subscription = hub.Subscribe(DecisionFilter());
  absl::StatusOr<std::unique_ptr<DecisionFeed>> feed = DecisionFeed::Start(&hub);
  ASSERT_TRUE(feed.ok()) << feed.status();
  absl::StatusOr<int> end = (*feed)->NewWriterEnd();
  ASSERT_TRUE(end.ok()) << end.status();
  const std::string batch = absl::StrCat(Line(1), "\n", Line(2), "\n");
  ASSERT_EQ(send(*end, batch.data(), batch.size(), 0), static_cast<ssize_t>(batch.size()));
  std::vector<std::string> refs;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (refs.size() < 2 && absl::Now() < deadline) {
    for (const auto& d : subscription->Take(absl::Milliseconds(100)).decisions) {
      refs.push_back(d->record.ref());
    }
  }
  EXPECT_THAT(refs, ::testing::ElementsAre("r1", "r2"));
  close(*end);
}

}  // namespace
}  // namespace leash::controlplane
