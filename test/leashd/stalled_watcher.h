// A Control.WatchDecisions watcher that does not keep up: it follows every decision, reads
// until the live mark (it is subscribed), then reads nothing until Resume (or ever). What it
// receives once it reads again is counted: the decision lines, and the lines leashd told it
// were dropped. For the decision stream's load test and benchmark.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/control.grpc.pb.h"

namespace leash::testing {

class StalledWatcher {
 public:
  // Starts the call on `admin_socket` and returns once leashd said it is live.
  static absl::StatusOr<std::unique_ptr<StalledWatcher>> Start(const std::string& admin_socket);
  // Cancels the call.
  ~StalledWatcher();

  // Reads again, on a thread of its own, until the call ends.
  void Resume();
  uint64_t lines() const { return lines_.load(); }
  uint64_t told_dropped() const { return told_dropped_.load(); }
  // Microseconds since the last event was read (0 before Resume).
  int64_t quiet_us() const;

 private:
  StalledWatcher() = default;

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<leash::v1::Control::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<leash::v1::WatchDecisionsEvent>> reader_;
  std::thread thread_;
  std::atomic<uint64_t> lines_{0}, told_dropped_{0};
  std::atomic<int64_t> last_read_ns_{0};
};

}  // namespace leash::testing
