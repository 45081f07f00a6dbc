// Runs reconcile passes one at a time, on SIGHUP and on Control.Reconcile. A request that
// arrives during a pass is coalesced into one further pass afterwards rather than re-entering a
// half-applied one (docs/ARCHITECTURE.md, rule C3). Each pass is armed with a watchdog: one
// that runs past its limit (30 s) has every thread's stack dumped to stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controlplane/clock.h"
#include "leash/v1/control.pb.h"

namespace leash::controlplane {

class ReconcileLoop {
 public:
  using PassFn = std::function<leash::v1::ReconcileReport()>;
  using ReportFn = std::function<void(const leash::v1::ReconcileReport&)>;
  // Called when a pass overruns the watchdog limit (default: dump every thread's stack to
  // stderr).
  using OverrunFn = std::function<void(absl::Duration running)>;

  // `retry`: after a pass whose report asks for it (report.retry: a chain that would not apply,
  // a listener that would not bind, a sidecar that did not ack), another pass runs by itself
  // after this long, doubling up to 16 times it while the problem stays; zero: never.
  // `clock` times the retries, the watchdog and RequestAndWait; it outlives the loop.
  ReconcileLoop(PassFn pass, ReportFn on_report, absl::Duration watchdog = absl::Seconds(30),
                OverrunFn on_overrun = nullptr, absl::Duration retry = absl::ZeroDuration(),
                Clock& clock = Clock::Real());
  ~ReconcileLoop();  // Stop()s

  void Start();
  // Finishes the pass in progress (if any) and stops.
  void Stop();

  // Asks for a pass. Cheap; never blocks on a running pass. Thread-safe.
  void Request();

  // Asks for a pass and waits for one that started after this call to finish, returning its
  // report (DeadlineExceeded in report.error if `timeout` passes first).
  leash::v1::ReconcileReport RequestAndWait(absl::Duration timeout);

  // Passes run since Start.
  uint64_t passes() const;
  leash::v1::ReconcileReport last_report() const;

 private:
  void Run();
  void Watch();

  const PassFn pass_;
  const ReportFn on_report_;
  const absl::Duration watchdog_;
  const OverrunFn on_overrun_;
  const absl::Duration retry_;
  Clock& clock_;
  std::thread runner_;
  std::thread watchdog_thread_;

  mutable absl::Mutex mu_;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time pass_started_ ABSL_GUARDED_BY(mu_);
  bool overrun_reported_ ABSL_GUARDED_BY(mu_) = false;
  // Passes started and finished, to match waiters to the pass that serves them.
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  leash::v1::ReconcileReport last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::controlplane
