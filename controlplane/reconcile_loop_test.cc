#include "controlplane/reconcile_loop.h"

#include <atomic>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"

namespace leash::controlplane {
namespace {

using leash::testing::WaitFor;

TEST(ReconcileLoop, RequestsDuringAPassAreCoalescedIntoOneMorePass) {
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
      nullptr);
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
  absl::SleepFor(absl::Milliseconds(100));
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

// A pass that leaves something not in force (a chain that would not apply, a squatted
// listener port) is followed by another without anyone asking, until one is clean; then the
// loop waits for a request again.
TEST(ReconcileLoop, APassThatLeavesSomethingNotInForceIsRetriedUntilItIs) {
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
      nullptr, absl::Seconds(30), nullptr, /*retry=*/absl::Milliseconds(20));
  loop.Start();
  loop.Request();
  ASSERT_TRUE(WaitFor([&] { return loop.passes() == 4; }, absl::Seconds(5)));
  absl::SleepFor(absl::Milliseconds(500));  // well past the longest retry delay (16 x 20 ms)
  EXPECT_EQ(passes.load(), 4);
  loop.Stop();
}

// The passes a loop makes after one request when every pass returns `report`: the first, and
// any it then runs by itself within 200 ms.
int PassesAfterOneRequest(const leash::v1::ReconcileReport& report, absl::Duration retry) {
  std::atomic<int> passes{0};
  ReconcileLoop loop(
      [&] {
        ++passes;
        return report;
      },
      nullptr, absl::Seconds(30), nullptr, retry);
  loop.Start();
  loop.Request();
  EXPECT_TRUE(WaitFor([&] { return loop.passes() == 1; }, absl::Seconds(5)));
  absl::SleepFor(absl::Milliseconds(200));
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
  absl::Mutex mu;
  bool release = false;
  std::atomic<int> overruns{0};
  ReconcileLoop loop(
      [&] {
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(&release));
        return leash::v1::ReconcileReport();
      },
      nullptr, absl::Milliseconds(100), [&](absl::Duration running) {
        EXPECT_GE(running, absl::Milliseconds(100));
        ++overruns;
      });
  loop.Start();
  loop.Request();
  ASSERT_TRUE(WaitFor([&] { return overruns.load() == 1; }, absl::Seconds(5)));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(overruns.load(), 1);
  {
    absl::MutexLock lock(&mu);
    release = true;
  }
  loop.Stop();
}

}  // namespace
}  // namespace leash::controlplane
