// ProcessFacts from a table, for unit tests of the watcher: a pid not in it has exited.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <utility>

#include "fswatch/process_facts.h"

namespace leash::fswatch::testing {

class FakeProcessFacts final : public ProcessFacts {
 public:
  void Set(pid_t pid, RawProcess facts) { table_[pid] = std::move(facts); }
  // Called at each read, before it answers: what the test checks at that moment.
  void OnRead(std::function<void(pid_t)> hook) { on_read_ = std::move(hook); }
  int reads() const { return reads_.load(); }
  RawProcess Read(pid_t pid) const override {
    reads_.fetch_add(1);
    if (on_read_) on_read_(pid);
    auto it = table_.find(pid);
    return it == table_.end() ? RawProcess() : it->second;
  }

 private:
  std::map<pid_t, RawProcess> table_;
  std::function<void(pid_t)> on_read_;
  mutable std::atomic<int> reads_{0};
};

}  // namespace leash::fswatch::testing
