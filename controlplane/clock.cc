#include "controlplane/clock.h"

namespace leash::controlplane {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  bool AwaitWithDeadline(absl::Mutex& mu, const absl::Condition& condition,
                         absl::Time deadline) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu.AwaitWithDeadline(condition, deadline);
  }
};

}  // namespace

Clock& Clock::Real() {
  static RealClock* const clock = new RealClock;
  return *clock;
}

}  // namespace leash::controlplane
