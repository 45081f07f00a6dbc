// ThreadPoolResolver: answers arrive on the loop, are cached and coalesced, a slow name stalls
// only its own waiters, and a cancelled waiter is never called. The getaddrinfo lookup itself
// is exercised against the host's /etc/hosts (localhost).
#include "proxy/resolver.h"

#include <atomic>
#include <string>
#include <vector>

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

// A lookup table whose "slow.test" blocks until released.
struct Table {
  absl::Notification release_slow;
  std::atomic<int> calls{0};
  ResolveResult Lookup(const std::string& name) {
    ++calls;
    if (name == "slow.test") release_slow.WaitForNotification();
    ResolveResult result;
    if (name == "missing.test") {
      result.status = absl::NotFoundError("no address for missing.test");
    } else {
      result.addresses = {Ip("192.0.2.1")};
    }
    return result;
  }
};

ResolverOptions OptionsFor(Table* table) {
  ResolverOptions options;
  options.threads = 2;
  options.lookup = [table](const std::string& name) { return table->Lookup(name); };
  return options;
}

TEST(ThreadPoolResolver, SecondAskIsAnsweredFromTheCache) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table));
  Waiter first;
  thread.loop()->RunSync([&] { EXPECT_FALSE(resolver.Resolve("a.test", &first).has_value()); });
  ASSERT_TRUE(first.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(first.result.status.ok());
  Waiter second;
  thread.loop()->RunSync([&] {
    std::optional<ResolveResult> cached = resolver.Resolve("a.test", &second);
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
    resolver.Resolve("slow.test", &a);
    resolver.Resolve("slow.test", &b);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(a.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_TRUE(b.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(table.calls.load(), 1);
}

TEST(ThreadPoolResolver, ASlowNameDoesNotHoldUpAnother) {
  LoopThread thread;
  Table table;
  ThreadPoolResolver resolver(thread.loop(), OptionsFor(&table));
  Waiter slow, fast;
  thread.loop()->RunSync([&] {
    resolver.Resolve("slow.test", &slow);
    resolver.Resolve("fast.test", &fast);
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
  thread.loop()->RunSync([&] { resolver.Resolve("missing.test", &waiter); });
  ASSERT_TRUE(waiter.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(waiter.result.status.code(), absl::StatusCode::kNotFound);
  thread.loop()->RunSync([&] {
    std::optional<ResolveResult> cached = resolver.Resolve("missing.test", &waiter);
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
    resolver.Resolve("slow.test", &cancelled);
    resolver.Resolve("slow.test", &kept);
    resolver.Cancel("slow.test", &cancelled);
  });
  table.release_slow.Notify();
  ASSERT_TRUE(kept.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  thread.loop()->RunSync([] {});
  EXPECT_FALSE(cancelled.done.HasBeenNotified());
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
