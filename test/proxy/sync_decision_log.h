// A synchronous DecisionSink for test builds of leash-proxy: one write(2) of one JSON line per
// record, to a descriptor the test opened. It stands in only for
// leash::sidecar::AsyncDecisionLog (another branch's part) so the rest of the proxy binary can
// be run end to end now; the line format is the engine's DecisionLine either way.
#pragma once

#include <unistd.h>

#include <atomic>
#include <string>

#include "engine/decision_record.h"

namespace leash::testing {

class SyncDecisionLog final : public engine::DecisionSink {
 public:
  explicit SyncDecisionLog(int fd) : fd_(fd) {}
  ~SyncDecisionLog() override { close(fd_); }
  void Record(leash::v1::DecisionRecord record) override {
    const std::string line = engine::DecisionLine(record);
    if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ++lost_;
  }
  uint64_t lost() const { return lost_.load(); }

 private:
  const int fd_;
  std::atomic<uint64_t> lost_{0};
};

}  // namespace leash::testing
