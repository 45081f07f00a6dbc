#include "controlplane/reconcile_loop.h"

#include <atomic>
#include <thread>

#include "controlplane/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"

namespace leash::controlplane {
namespace {

using leash::testing::WaitFor;
using testing::FakeClock;

constexpr absl::Duration kWatchdog = absl::Seconds(30);

// The loop is idle: its runner waits for a request with no retry due, so no further pass can
// start without one.
bool Idle(FakeClock& clock) { return clock.WaitForBlockedUntil(absl::InfiniteFuture()); }

TEST(ReconcileLoop, RequestsDuringAPassAreCoalescedIntoOneMorePass) {
  FakeClock clock;
  absl::Mutex gate_mu;
  bool gate_open = false;
  std::atomic<int> passes{0};
  ReconcileLoop loop(
      [&] {
        ++passes;
        absl::MutexLock lock(&gate_mu);
        gate_mu.Await(absl::Condition(&gate_open));
        return leash::v1::ReconcileReport();
      },
      nullptr, kWatchdog, nullptr, absl::ZeroDuration(), clock);
  loop.Start();
  loop.Request();
  ASSERT_TRUE(WaitFor([&] { return passes.load() == 1; }, absl::Seconds(5)));
  // A burst of 20 SIGHUPs while the first pass is held.
  for (int i = 0; i < 20; ++i) loop.Request();
  {
    absl::MutexLock lock(&gate_mu);
    gate_open = true;
  }
  ASSERT_TRUE(WaitFor([&] { return loop.passes() == 2; }, absl::Seconds(5)));
  // Nothing more is pending: the burst became exactly one further pass.
  ASSERT_TRUE(Idle(clock));
  EXPECT_EQ(loop.passes(), 2u);
  EXPECT_EQ(passes.load(), 2);
  loop.Stop();
}

TEST(ReconcileLoop, RequestAndWaitReturnsAPassThatStartedAfterTheRequest) {
  std::atomic<int> counter{0};
  ReconcileLoop loop(
      [&] {
        leash::v1::ReconcileReport report;
        report.set_unchanged(++counter);
        return report;
      },
      nullptr);
  loop.Start();
  EXPECT_EQ(loop.RequestAndWait(absl::Seconds(5)).unchanged(), 1u);
  EXPECT_EQ(loop.RequestAndWait(absl::Seconds(5)).unchanged(), 2u);
  loop.Stop();
}

TEST(ReconcileLoop, RequestAndWaitGivesUpAtItsTimeoutWithAnError) {
  FakeClock clock;
  absl::Mutex gate_mu;
  bool gate_open = false;
  ReconcileLoop loop(
      [&] {
        absl::MutexLock lock(&gate_mu);
        gate_mu.Await(absl::Condition(&gate_open));
        return leash::v1::ReconcileReport();
      },
      nullptr, kWatchdog, nullptr, absl::ZeroDuration(), clock);
  loop.Start();
  leash::v1::ReconcileReport report;
  std::thread caller([&] { report = loop.RequestAndWait(absl::Seconds(20)); });
  const absl::Time deadline = clock.Now() + absl::Seconds(20);
  ASSERT_TRUE(clock.WaitForBlockedUntil(deadline));
  clock.Advance(absl::Seconds(20));
  caller.join();
  EXPECT_THAT(report.error(), ::testing::HasSubstr("did not finish within 20s"));
  {
    absl::MutexLock lock(&gate_mu);
    gate_open = true;
  }
  loop.Stop();
}

// A pass that leaves something not in force (a chain that would not apply, a squatted
// listener port) is followed by another without anyone asking, until one is clean; then the
// loop waits for a request again.
TEST(ReconcileLoop, APassThatLeavesSomethingNotInForceIsRetriedUntilItIs) {
  FakeClock clock;
  std::atomic<int> passes{0};
  ReconcileLoop loop(
      [&] {
        leash::v1::ReconcileReport report;
        if (++passes <= 3) {
          report.add_not_in_force("leash-iris (uid 1001): its chain");
          report.set_retry(true);
        }
        return report;
      },
      nullptr, kWatchdog, nullptr, /*retry=*/absl::Milliseconds(20), clock);
  loop.Start();
  loop.Request();
  // Each retry is due 20, 40, 80 ms after the pass before it.
  for (const absl::Duration delay :
       {absl::Milliseconds(20), absl::Milliseconds(40), absl::Milliseconds(80)}) {
    ASSERT_TRUE(clock.WaitForBlockedUntil(clock.Now() + delay)) << delay;
    clock.Advance(delay);
  }
  ASSERT_TRUE(WaitFor([&] { return loop.passes() == 4; }, absl::Seconds(5)));
  ASSERT_TRUE(Idle(clock));
  EXPECT_EQ(passes.load(), 4);
  loop.Stop();
}

// While the problem stays, the delay doubles up to 16 times the first one and stays there.
TEST(ReconcileLoop, TheRetryDelayDoublesUpToSixteenTimesTheFirst) {
  FakeClock clock;
  leash::v1::ReconcileReport report;
  report.add_not_in_force("leash-iris (uid 1001): its chain");
  report.set_retry(true);
  ReconcileLoop loop([&] { return report; }, nullptr, kWatchdog, nullptr,
                     /*retry=*/absl::Seconds(1), clock);
  loop.Start();
  loop.Request();
  for (const int seconds : {1, 2, 4, 8, 16, 16, 16}) {
    const absl::Duration delay = absl::Seconds(seconds);
    ASSERT_TRUE(clock.WaitForBlockedUntil(clock.Now() + delay)) << delay;
    // Not a moment early.
    clock.Advance(delay - absl::Milliseconds(1));
    ASSERT_TRUE(clock.WaitForBlockedUntil(clock.Now() + absl::Milliseconds(1)));
    clock.Advance(absl::Milliseconds(1));
  }
  loop.Stop();
}

// The passes a loop makes after one request when every pass returns `report`: the first, and
// any it then runs by itself before it waits for a request with no retry due.
int PassesAfterOneRequest(const leash::v1::ReconcileReport& report, absl::Duration retry) {
  FakeClock clock;
  std::atomic<int> passes{0};
  ReconcileLoop loop(
      [&] {
        ++passes;
        return report;
      },
      nullptr, kWatchdog, nullptr, retry, clock);
  loop.Start();
  loop.Request();
  EXPECT_TRUE(WaitFor([&] { return loop.passes() == 1; }, absl::Seconds(5)));
  EXPECT_TRUE(Idle(clock));
  loop.Stop();
  return passes.load();
}

// Something not in force that no later pass can change (agents a single-subject service
// cannot enforce) is not retried.
TEST(ReconcileLoop, NotInForceWithoutRetryIsNotRetried) {
  leash::v1::ReconcileReport report;
  report.add_not_in_force("agent account(s) leash-iris are not enforced: ...");
  EXPECT_EQ(PassesAfterOneRequest(report, /*retry=*/absl::Milliseconds(20)), 1);
}

TEST(ReconcileLoop, WithoutARetryDelayNothingRunsUnasked) {
  leash::v1::ReconcileReport report;
  report.add_not_in_force("leash-iris (uid 1001): its chain");
  report.set_retry(true);
  EXPECT_EQ(PassesAfterOneRequest(report, /*retry=*/absl::ZeroDuration()), 1);
}

TEST(ReconcileLoop, APassPastTheWatchdogLimitIsReportedOnce) {
  FakeClock clock;
  absl::Mutex mu;
  bool release = false;
  std::atomic<bool> in_pass{false};
  std::atomic<int> overruns{0};
  absl::Duration reported;
  ReconcileLoop loop(
      [&] {
        in_pass = true;
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(&release));
        return leash::v1::ReconcileReport();
      },
      nullptr, absl::Milliseconds(100),
      [&](absl::Duration running) {
        reported = running;
        ++overruns;
      },
      absl::ZeroDuration(), clock);
  loop.Start();
  loop.Request();
  ASSERT_TRUE(WaitFor([&] { return in_pass.load(); }, absl::Seconds(5)));
  // The watchdog looks every quarter of its limit: not yet at 75 ms, once at 100 ms, and not
  // again however long the pass goes on.
  for (int quarter = 1; quarter <= 12; ++quarter) {
    ASSERT_TRUE(clock.WaitForBlockedUntil(clock.Now() + absl::Milliseconds(25))) << quarter;
    clock.Advance(absl::Milliseconds(25));
    if (quarter == 3) {
      ASSERT_TRUE(clock.WaitForBlockedUntil(clock.Now() + absl::Milliseconds(25)));
      EXPECT_EQ(overruns.load(), 0);
    }
  }
  ASSERT_TRUE(clock.WaitForBlockedUntil(clock.Now() + absl::Milliseconds(25)));
  EXPECT_EQ(overruns.load(), 1);
  EXPECT_EQ(reported, absl::Milliseconds(100));
  {
    absl::MutexLock lock(&mu);
    release = true;
  }
  loop.Stop();
}

}  // namespace
}  // namespace leash::controlplane
