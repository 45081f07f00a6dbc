#include "controlplane/testing/fake_clock.h"

#include <vector>

namespace leash::controlplane::testing {

FakeClock::FakeClock(absl::Time start) : start_(start) {}

absl::Time FakeClock::Load() const {
  return start_ + absl::Nanoseconds(elapsed_ns_.load());
}

absl::Time FakeClock::Now() { return Load(); }

bool FakeClock::AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                                  absl::Time deadline) {
  Waiter waiter{&mu, deadline};
  std::list<Waiter*>::iterator entry;
  {
    absl::MutexLock lock(&mu_);
    entry = waiters_.insert(waiters_.end(), &waiter);
  }
  auto done = [&] {
    const bool met = condition.Eval();
    const bool due = Load() >= deadline;
    waiter.blocked.store(!met && !due);
    return met || due;
  };
  mu.Await(absl::Condition(&done));
  waiter.blocked.store(false);
  {
    absl::MutexLock lock(&mu_);
    waiters_.erase(entry);
  }
  return condition.Eval();
}

void FakeClock::Advance(absl::Duration by) {
  std::vector<absl::Mutex*> to_wake;
  {
    absl::MutexLock lock(&mu_);
    elapsed_ns_.fetch_add(absl::ToInt64Nanoseconds(by));
    for (Waiter* waiter : waiters_) to_wake.push_back(waiter->mu);
  }
  // Releasing a mutex makes absl re-evaluate the conditions waited on under it: each waiter
  // sees the new time. Not under mu_: a waiter takes mu_ while it holds its own mutex.
  for (absl::Mutex* mu : to_wake) {
    mu->Lock();
    mu->Unlock();
  }
}

bool FakeClock::WaitForBlocked(const std::function<bool(absl::Time)>& match,
                               absl::Duration timeout) {
  auto found = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    for (const Waiter* waiter : waiters_) {
      if (waiter->blocked.load() && match(waiter->deadline)) return true;
    }
    return false;
  };
  // Polled: `blocked` changes under the waiters' mutexes, not this one.
  const absl::Time give_up = absl::Now() + timeout;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (found()) return true;
    }
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Microseconds(200));
  }
}

bool FakeClock::WaitForBlockedUntil(absl::Time deadline, absl::Duration timeout) {
  return WaitForBlocked([deadline](absl::Time d) { return d == deadline; }, timeout);
}

}  // namespace leash::controlplane::testing
