#include "fswatch/process_read_budget.h"

namespace leash::fswatch {

bool ProcessReadBudget::Take(uint32_t uid, int64_t now_ns) {
  const int64_t second = now_ns / 1000000000;
  if (second != second_) {
    second_ = second;
    used_.clear();
  }
  uint32_t& used = used_[uid];
  if (used >= limit_) return false;
  ++used;
  return true;
}

}  // namespace leash::fswatch
