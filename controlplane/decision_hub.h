// leashd's live decision stream: every line the sidecars and the tools service log reaches
// Publish, which hands it to each subscriber whose filter matches. Each subscriber has a
// bounded queue; one that does not keep up loses lines (counted and told on its next Take),
// so a slow watcher never slows the publisher, and the publisher never slows a decision
// (docs/ARCHITECTURE.md, rule L2).
//
// Lines arrive in batches (a writer's datagram holds every line its writer thread took in one
// pass) and are handed on as batches: each line is parsed once, and each subscriber's lock is
// taken, and its reader woken, once per batch rather than once per line. Per line, the lock
// round trips and wake-ups were what let a watcher fall seconds behind at 10,000 lines a
// second on a busy 2-core host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controlplane/decision_filter.h"

namespace leash::controlplane {

class DecisionHub {
 public:
  // A watcher's queue. Thread-safe.
  class Subscription {
   public:
    Subscription(DecisionFilter filter, size_t capacity)
        : filter_(std::move(filter)), capacity_(capacity) {}

    struct Batch {
      std::vector<std::shared_ptr<const StreamedDecision>> decisions;
      // Lines lost since the previous Take because the queue was full.
      uint64_t dropped = 0;
    };
    // Waits up to `timeout` for a line (or a drop), then takes all that are queued.
    Batch Take(absl::Duration timeout);
    // Lines lost since start.
    uint64_t dropped_total() const;

   private:
    friend class DecisionHub;
    // Queues those of `decisions` that match, in order; what does not fit in the queue is
    // counted as dropped. One lock and at most one wake-up of the reader per call. Never
    // waits on the reader.
    void Offer(const std::vector<std::shared_ptr<const StreamedDecision>>& decisions);
    bool Ready() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

    const DecisionFilter filter_;
    const size_t capacity_;
    mutable absl::Mutex mu_;
    std::deque<std::shared_ptr<const StreamedDecision>> queue_ ABSL_GUARDED_BY(mu_);
    uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
    uint64_t dropped_total_ ABSL_GUARDED_BY(mu_) = 0;
  };

  // `account_of` names the account of a uid ("" for none); called on the publishing thread.
  // `capacity`: lines a subscriber's queue holds before it drops.
  explicit DecisionHub(std::function<std::string(uint32_t)> account_of, size_t capacity = 4096);

  // Live lines from now on, those matching `filter`. The subscription ends when the last
  // reference to it is released.
  std::shared_ptr<Subscription> Subscribe(DecisionFilter filter);

  // One log line (no newline). A line that is not a record is counted and not passed on.
  // Thread-safe; never waits on a subscriber's reader.
  void Publish(absl::string_view line);
  // Every '\n'-separated line of `lines` (empty ones skipped), as Publish, handed to each
  // subscriber as one batch.
  void PublishLines(absl::string_view lines);

  // The account of `uid` as Publish names it.
  std::string AccountOf(uint32_t uid) const { return account_of_(uid); }

  uint64_t published() const;
  uint64_t unreadable() const;

 private:
  const std::function<std::string(uint32_t)> account_of_;
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::vector<std::weak_ptr<Subscription>> subscribers_ ABSL_GUARDED_BY(mu_);
  uint64_t published_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t unreadable_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leash::controlplane
