// How many acting-process reads (fswatch/process_facts.h) each UID's lines get per second. A
// read and its masking cost tens of microseconds on the watcher's one loop, so a subject that
// floods denied opens would otherwise make every other subject's events wait behind its own
// /proc reads. Past its budget a line names only the pid. Pure: the caller gives the time.
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_map.h"

namespace leash::fswatch {

class ProcessReadBudget {
 public:
  explicit ProcessReadBudget(uint32_t reads_per_uid_per_second)
      : limit_(reads_per_uid_per_second) {}

  // Whether `uid` may have one more read in the second `now_ns` (monotonic) falls in; counts it.
  // Memory: one entry per UID seen in the current second.
  bool Take(uint32_t uid, int64_t now_ns);

 private:
  const uint32_t limit_;
  int64_t second_ = -1;
  absl::flat_hash_map<uint32_t, uint32_t> used_;
};

}  // namespace leash::fswatch
