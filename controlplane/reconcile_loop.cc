#include "controlplane/reconcile_loop.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "base/stack_dump.h"

namespace leash::controlplane {

ReconcileLoop::ReconcileLoop(PassFn pass, ReportFn on_report, absl::Duration watchdog,
                             OverrunFn on_overrun, absl::Duration retry, Clock& clock)
    : pass_(std::move(pass)),
      on_report_(std::move(on_report)),
      watchdog_(watchdog),
      on_overrun_(on_overrun ? std::move(on_overrun) : [](absl::Duration running) {
        std::fprintf(stderr,
                     "leashd: a reconcile has been running for %s (limit exceeded); every "
                     "thread's stack follows\n",
                     absl::FormatDuration(running).c_str());
        base::DumpAllThreadStacks(STDERR_FILENO);
      }),
      retry_(retry),
      clock_(clock) {}

ReconcileLoop::~ReconcileLoop() { Stop(); }

void ReconcileLoop::Start() {
  runner_ = std::thread([this] { Run(); });
  watchdog_thread_ = std::thread([this] { Watch(); });
}

void ReconcileLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (runner_.joinable()) runner_.join();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
}

void ReconcileLoop::Request() {
  absl::MutexLock lock(&mu_);
  pending_ = true;
}

leash::v1::ReconcileReport ReconcileLoop::RequestAndWait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  pending_ = true;
  // The pass that serves this request is the next one to start; a pass already running
  // started before the request and does not count.
  const uint64_t wanted = started_ + 1;
  auto served = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return finished_ >= wanted || stopping_; };
  if (!clock_.AwaitWithDeadline(mu_, absl::Condition(&served), clock_.Now() + timeout) ||
      finished_ < wanted) {
    leash::v1::ReconcileReport report;
    report.set_error(absl::StrCat("the reconcile did not finish within ",
                                  absl::FormatDuration(timeout),
                                  "; it goes on, and `leash status` shows its result"));
    return report;
  }
  return last_;
}

bool ReconcileLoop::Stuck() const {
  absl::MutexLock lock(&mu_);
  return running_ && clock_.Now() - pass_started_ >= watchdog_;
}

uint64_t ReconcileLoop::passes() const {
  absl::MutexLock lock(&mu_);
  return finished_;
}

leash::v1::ReconcileReport ReconcileLoop::last_report() const {
  absl::MutexLock lock(&mu_);
  return last_;
}

void ReconcileLoop::Run() {
  // When the last pass left something not in force, the next one runs by itself at retry_at.
  absl::Time retry_at = absl::InfiniteFuture();
  absl::Duration next_retry = retry_;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return pending_ || stopping_; };
      // false: the retry is due
      clock_.AwaitWithDeadline(mu_, absl::Condition(&ready), retry_at);
      if (stopping_) return;
      // Every request made up to now is served by this one pass.
      pending_ = false;
      running_ = true;
      overrun_reported_ = false;
      pass_started_ = clock_.Now();
      ++started_;
    }
    const absl::Time started = clock_.Now();
    leash::v1::ReconcileReport report = pass_();
    report.set_duration_us(absl::ToInt64Microseconds(clock_.Now() - started));
    if (on_report_) on_report_(report);
    if (retry_ > absl::ZeroDuration() && report.retry()) {
      retry_at = clock_.Now() + next_retry;
      next_retry = std::min(next_retry * 2, retry_ * 16);
    } else {
      retry_at = absl::InfiniteFuture();
      next_retry = retry_;
    }
    absl::MutexLock lock(&mu_);
    running_ = false;
    last_ = std::move(report);
    ++finished_;
  }
}

void ReconcileLoop::Watch() {
  while (true) {
    absl::Duration running;
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      clock_.AwaitWithDeadline(mu_, absl::Condition(&stop),
                               clock_.Now() + std::min(watchdog_ / 4, absl::Milliseconds(500)));
      if (stopping_) return;
      if (!running_ || overrun_reported_) continue;
      running = clock_.Now() - pass_started_;
      if (running < watchdog_) continue;
      overrun_reported_ = true;
    }
    on_overrun_(running);
  }
}

}  // namespace leash::controlplane
