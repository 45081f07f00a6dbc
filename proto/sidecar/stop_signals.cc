#include "proto/sidecar/stop_signals.h"

#include <pthread.h>
#include <time.h>

#include <cerrno>

#include "absl/time/clock.h"

namespace leash::sidecar {

sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  return signals;
}

sigset_t BlockStopSignals(std::initializer_list<int> also) {
  const sigset_t stop = StopSignals();
  sigset_t blocked = stop;
  for (int signal_number : also) sigaddset(&blocked, signal_number);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  return stop;
}

std::optional<int> WaitForStopSignal(const sigset_t& signals, absl::Duration timeout,
                                     absl::FunctionRef<void()> on_hangup) {
  const bool forever = timeout == absl::InfiniteDuration();
  const absl::Time deadline = forever ? absl::InfiniteFuture() : absl::Now() + timeout;
  for (;;) {
    int signal_number;
    if (forever) {
      signal_number = sigwaitinfo(&signals, nullptr);
    } else {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return std::nullopt;
      const timespec wait = absl::ToTimespec(left);
      signal_number = sigtimedwait(&signals, nullptr, &wait);
      if (signal_number < 0 && errno == EAGAIN) return std::nullopt;
    }
    if (signal_number < 0) continue;  // EINTR: another signal's handler ran
    if (signal_number == SIGHUP) {
      on_hangup();
      continue;
    }
    return signal_number;
  }
}

}  // namespace leash::sidecar
