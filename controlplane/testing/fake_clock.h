// A Clock that moves only when a test says so, for the unit tests of leashd's timed loops: a
// retry delay, a watchdog limit or a ten-minute death window is crossed by Advance() instead of
// slept through, and "nothing more happens" is checked by seeing the loop blocked on the clock
// with the deadline it chose (no sleep that hopes to be long enough).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controlplane/clock.h"

namespace leash::controlplane::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000));

  absl::Time Now() override;
  bool AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                         absl::Time deadline) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Moves the time forward and wakes every waiter whose deadline it reaches. Call it only while
  // the objects waiting on this clock are alive (it locks their mutexes).
  void Advance(absl::Duration by);

  // Waits (in real time, up to `timeout`) until a thread is blocked on this clock, its condition
  // false, with a deadline `match` accepts. True once one is.
  bool WaitForBlocked(const std::function<bool(absl::Time deadline)>& match,
                      absl::Duration timeout = absl::Seconds(10));
  // The same for a deadline equal to `deadline` (absl::InfiniteFuture(): waiting without one).
  bool WaitForBlockedUntil(absl::Time deadline, absl::Duration timeout = absl::Seconds(10));

 private:
  struct Waiter {
    absl::Mutex* mu;
    absl::Time deadline;
    // Set by the wait's own condition: false while the caller's condition holds, so a thread
    // that is about to return is not taken for a blocked one.
    std::atomic<bool> blocked{false};
  };
  absl::Time Load() const;

  const absl::Time start_;
  // Nanoseconds since start_; atomic because waiters' conditions read it under their own mutex.
  std::atomic<int64_t> elapsed_ns_{0};
  absl::Mutex mu_;
  std::list<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::controlplane::testing
