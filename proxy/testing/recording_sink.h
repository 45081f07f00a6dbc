// A DecisionSink for unit tests: keeps every record in memory and lets a test wait for one.
#pragma once

#include <functional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/decision_record.h"

namespace leash::proxy::testing {

class RecordingSink final : public engine::DecisionSink {
 public:
  void Record(leash::v1::DecisionRecord record) override {
    absl::MutexLock lock(&mu_);
    records_.push_back(std::move(record));
  }

  std::vector<leash::v1::DecisionRecord> records() const {
    absl::MutexLock lock(&mu_);
    return records_;
  }

  // Waits up to `timeout` until `count` records have arrived; returns them (maybe fewer).
  std::vector<leash::v1::DecisionRecord> WaitForCount(size_t count, absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return records_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
    return records_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<leash::v1::DecisionRecord> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::proxy::testing
