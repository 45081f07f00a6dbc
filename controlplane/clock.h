// The time leashd's timed loops (the reconcile loop's retries and watchdog, the sidecar
// supervisor's polls, backoffs and death window) read and wait on. Behind this interface so that
// their tests move time by hand instead of sleeping through it (controlplane/testing/fake_clock.h);
// leashd itself always runs on Clock::Real().
#pragma once

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leash::controlplane {

class Clock {
 public:
  virtual ~Clock() = default;

  // The real clock (absl::Now, absl::Mutex's own timed waits).
  static Clock& Real();

  virtual absl::Time Now() = 0;

  // Called with `mu` held: releases it until `condition` holds or Now() reaches `deadline`,
  // then holds it again. Returns whether `condition` holds. `condition` reads only state
  // guarded by `mu`.
  virtual bool AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                                 absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};

}  // namespace leash::controlplane
