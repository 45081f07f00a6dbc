// ThreadPoolResolver: answers arrive on the loop, are cached and coalesced, a slow name stalls
// only its own waiters, and a cancelled waiter is never called. The getaddrinfo lookup itself
// is exercised against the host's /etc/hosts (localhost).
#include "proxy/resolver.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "proxy/testing/loop_thread.h"

namespace leash::proxy {
namespace {

using testing::LoopThread;

engine::IpAddress Ip(const std::string& text) { return *engine::ParseIpAddress(text); }

struct Waiter : ResolveWaiter {
  absl::Notification done;
  ResolveResult result;
  void OnResolved(const ResolveResult& r) override {
    result = r;
    done.Notify();
  }
};

constexpr uint32_t kRequester = 1001;

// A lookup table whose "slow*" names block until released.
struct Table {
  absl::Notification release_slow;
  std::atomic<int> calls{0};
  absl::Mutex mu;
  std::vector<std::string> order;  // the names looked up, in order
  std::vector<std::string> Order() {
    absl::MutexLock lock(&mu);
    return order;
  }
  ResolveResult Lookup(const std::string& name) {
    ++calls;
    {
      absl::MutexLock lock(&mu);
      order.push_back(name);
    }
    if (absl::StartsWith(name, "slow")) release_slow.WaitForNotification();
    ResolveResult result;
    if (name == "missing.test") {
      result.status = absl::NotFoundError("no address for missing.test");
    } else {
      result.addresses = {Ip("192.0.2.1")};
    }
    return result;
  }
};

ResolverOptions OptionsFor(Table* table, int threads = 2) {
  ResolverOptions options;
  options.threads = threads;
  options.lookup = [table](const std::string& name) { return table->Lookup(name); };
  return options;
}

TEST(ThreadPoolResolver, SecondAskIsAnsweredFromTheCache) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table));
  Waiter first;
  thread.loop()->RunSync([&] { EXPECT_FALSE(resolver.Resolve("a.test", kRequester, &first).has_value()); });
  ASSERT_TRUE(first.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(first.result.status.ok());
  Waiter second;
  thread.loop()->RunSync([&] {
    std::optional<ResolveResult> cached = resolver.Resolve("a.test", kRequester, &second);
    ASSERT_TRUE(cached.has_value());
    EXPECT_EQ(cached->addresses.front(), Ip("192.0.2.1"));
  });
  EXPECT_EQ(table.calls.load(), 1);
}

TEST(ThreadPoolResolver, ConcurrentAsksForOneNameShareOneLookup) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table));
  Waiter a, b;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", kRequester, &a);
    resolver.Resolve("slow.test", kRequester, &b);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(a.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_TRUE(b.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(table.calls.load(), 1);
}

// With the default four workers (one requester may hold three of them).
TEST(ThreadPoolResolver, ASlowNameDoesNotHoldUpAnother) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table, /*threads=*/4));
  Waiter slow, fast;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", kRequester, &slow);
    resolver.Resolve("fast.test", kRequester, &fast);
  });
  ASSERT_TRUE(fast.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_FALSE(slow.done.HasBeenNotified());
  table.release_slow.Notify();
  EXPECT_TRUE(slow.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

TEST(ThreadPoolResolver, FailuresAreCachedBriefly) {
  LoopThread thread;
  Table table;
  ResolverOptions options = OptionsFor(&table);
  options.negative_ttl = absl::Hours(1);
  ThreadPoolResolver resolver(thread.loop(), options);
  Waiter waiter;
  thread.loop()->RunSync([&] { resolver.Resolve("missing.test", kRequester, &waiter); });
  ASSERT_TRUE(waiter.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(waiter.result.status.code(), absl::StatusCode::kNotFound);
  thread.loop()->RunSync([&] {
    std::optional<ResolveResult> cached = resolver.Resolve("missing.test", kRequester, &waiter);
    ASSERT_TRUE(cached.has_value());
    EXPECT_EQ(cached->status.code(), absl::StatusCode::kNotFound);
  });
  EXPECT_EQ(table.calls.load(), 1);
}

TEST(ThreadPoolResolver, CancelledWaiterIsNotCalled) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table));
  Waiter cancelled, kept;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", kRequester, &cancelled);
    resolver.Resolve("slow.test", kRequester, &kept);
    resolver.Cancel("slow.test", &cancelled);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(kept.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  thread.loop()->RunSync([] {});
  EXPECT_FALSE(cancelled.done.HasBeenNotified());
}

TEST(ThreadPoolResolver, OneRequestersBacklogDoesNotDelayAnother) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table, /*threads=*/1));
  constexpr uint32_t kFlooder = 2001, kOther = 2002;
  std::vector<std::unique_ptr<Waiter>> flood;
  Waiter slow, other;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", kFlooder, &slow);  // holds the one worker
    for (int i = 0; i < 50; ++i) {
      flood.push_back(std::make_unique<Waiter>());
      resolver.Resolve(absl::StrCat("n", i, ".test"), kFlooder, flood.back().get());
    }
    resolver.Resolve("other.test", kOther, &other);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(other.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  // Served in turn: the other requester's name comes right after the flooder's next one, not
  // after its 50 (first in, first out would put it 52nd).
  const std::vector<std::string> order = table.Order();
  const auto at = std::find(order.begin(), order.end(), "other.test");
  ASSERT_NE(at, order.end());
  EXPECT_LE(at - order.begin(), 2);
  for (auto& waiter : flood) ASSERT_TRUE(waiter->done.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

// Slow names of one requester's own (a zone it controls, answering after glibc's time-outs)
// used to take every worker, and another agent's lookup waited out all of them, past its
// connect time-out. One requester runs at most threads - 1 lookups at once.
TEST(ThreadPoolResolver, OneRequestersSlowLookupsLeaveAWorkerForAnother) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table, /*threads=*/4));
  constexpr uint32_t kSlowZone = 2001, kOther = 2002;
  std::vector<std::unique_ptr<Waiter>> slow;
  Waiter other;
  thread.loop()->RunSync([&] {
    for (int i = 0; i < 8; ++i) {
      slow.push_back(std::make_unique<Waiter>());
      resolver.Resolve(absl::StrCat("slow", i, ".test"), kSlowZone, slow.back().get());
    }
  });
  for (int waited = 0; table.calls.load() < 3 && waited < 500; ++waited) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(100));  // time for a fourth to start, were it allowed
  EXPECT_EQ(table.calls.load(), 3);
  thread.loop()->RunSync([&] { resolver.Resolve("other.test", kOther, &other); });
  // Answered while every one of the slow requester's lookups is still blocked.
  EXPECT_TRUE(other.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  table.release_slow.Notify();
  for (auto& waiter : slow) ASSERT_TRUE(waiter->done.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

TEST(ThreadPoolResolver, ARequesterAtItsCapIsRefusedAtOnceAndOthersAreNot) {
  LoopThread thread;
  Table table;
  ResolverOptions options = OptionsFor(&table, /*threads=*/1);
  options.max_pending_per_requester = 2;
  ThreadPoolResolver resolver(thread.loop(), options);
  Waiter a, b, c, d;
  thread.loop()->RunSync([&] {
    EXPECT_FALSE(resolver.Resolve("slow.test", 1, &a).has_value());
    EXPECT_FALSE(resolver.Resolve("x.test", 1, &b).has_value());
    std::optional<ResolveResult> refused = resolver.Resolve("y.test", 1, &c);
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->status.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_FALSE(resolver.Resolve("z.test", 2, &d).has_value());
  });
  table.release_slow.Notify();
  ASSERT_TRUE(d.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_TRUE(b.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  // Answered, so the requester may ask again.
  Waiter e;
  thread.loop()->RunSync([&] { EXPECT_FALSE(resolver.Resolve("y.test", 1, &e).has_value()); });
  ASSERT_TRUE(e.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(e.result.status.ok());
}

TEST(ThreadPoolResolver, AQueuedNameNobodyWaitsForIsNotLookedUp) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table, /*threads=*/1));
  Waiter slow, gone, after;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", kRequester, &slow);
    resolver.Resolve("gone.test", kRequester, &gone);
    resolver.Cancel("gone.test", &gone);
    resolver.Resolve("after.test", kRequester, &after);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(after.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  thread.loop()->RunSync([] {});
  std::vector<std::string> order = table.Order();
  EXPECT_EQ(std::count(order.begin(), order.end(), "gone.test"), 0);
  EXPECT_FALSE(gone.done.HasBeenNotified());
  // Nothing was left cached for it: asked again, it is looked up.
  Waiter again;
  thread.loop()->RunSync(
      [&] { EXPECT_FALSE(resolver.Resolve("gone.test", kRequester, &again).has_value()); });
  ASSERT_TRUE(again.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(again.result.status.ok());
}

TEST(ThreadPoolResolver, ANameWantedAgainAfterItWasAbandonedIsLookedUp) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table, /*threads=*/1));
  Waiter slow, first, second;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", kRequester, &slow);
    resolver.Resolve("back.test", kRequester, &first);
    resolver.Cancel("back.test", &first);
    resolver.Resolve("back.test", kRequester, &second);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(second.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(second.result.status.ok()) << second.result.status;
  EXPECT_FALSE(first.done.HasBeenNotified());
}

TEST(GetaddrinfoLookup, ResolvesLocalhostFromTheHostsFile) {
  const ResolveResult result = GetaddrinfoLookup("localhost");
  ASSERT_TRUE(result.status.ok()) << result.status;
  bool has_v4_loopback = false;
  for (const engine::IpAddress& address : result.addresses) {
    has_v4_loopback |= address == Ip("127.0.0.1");
  }
  EXPECT_TRUE(has_v4_loopback);
}

TEST(GetaddrinfoLookup, AFailureNamesTheHost) {
  // .invalid never resolves (RFC 6761); offline, the resolver may also just fail.
  const ResolveResult result = GetaddrinfoLookup("no-such-host.invalid");
  ASSERT_FALSE(result.status.ok());
  EXPECT_NE(result.status.message().find("no-such-host.invalid"), std::string::npos)
      << result.status;
}

}  // namespace
}  // namespace leash::proxy
