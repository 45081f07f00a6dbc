#include "proto/sidecar/stop_signals.h"

#include <pthread.h>
#include <signal.h>

#include <optional>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace leash::sidecar {
namespace {

// Each test blocks the stop signals first, as a sidecar's main() does, and sends them to its
// own thread, so a signal is only ever taken by the wait.
class StopSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override { signals_ = BlockStopSignals(); }
  void TearDown() override { pthread_sigmask(SIG_UNBLOCK, &signals_, nullptr); }
  sigset_t signals_;
};

TEST_F(StopSignalsTest, TermAndIntStopAndHangupsAreReportedAndWaitedPast) {
  int hangups = 0;
  ASSERT_EQ(pthread_kill(pthread_self(), SIGHUP), 0);
  ASSERT_EQ(pthread_kill(pthread_self(), SIGTERM), 0);
  EXPECT_EQ(WaitForStopSignal(signals_, absl::InfiniteDuration(), [&] { ++hangups; }), SIGTERM);
  EXPECT_EQ(hangups, 1);
  ASSERT_EQ(pthread_kill(pthread_self(), SIGINT), 0);
  EXPECT_EQ(WaitForStopSignal(signals_, absl::Seconds(5), [&] { ++hangups; }), SIGINT);
  EXPECT_EQ(hangups, 1);
}

TEST_F(StopSignalsTest, AWaitWithATimeEndsEmptyWhenOnlyHangupsCame) {
  int hangups = 0;
  ASSERT_EQ(pthread_kill(pthread_self(), SIGHUP), 0);
  EXPECT_EQ(WaitForStopSignal(signals_, absl::Milliseconds(50), [&] { ++hangups; }),
            std::nullopt);
  EXPECT_EQ(hangups, 1);
}

TEST(BlockStopSignals, BlocksTheStopSignalsAndTheOnesAskedFor) {
  sigset_t before;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  const sigset_t stop = BlockStopSignals({SIGUSR2});
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGUSR2}) {
    EXPECT_TRUE(sigismember(&now, signal_number)) << signal_number;
  }
  EXPECT_FALSE(sigismember(&stop, SIGUSR2)) << "the extra signal is not a stop signal";
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

}  // namespace
}  // namespace leash::sidecar
