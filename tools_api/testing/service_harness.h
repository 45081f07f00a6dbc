// Test support: a ToolsService served by a real gRPC server on a Unix socket, a decision sink
// that keeps what it is given, and a socket path short enough for sun_path however long the
// directory (Bazel's TEST_TMPDIR is over 108 bytes) — for the service tests and the round-trip
// benchmark.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/decision_record.h"
#include "grpcpp/grpcpp.h"
#include "tools_api/tools_service.h"

namespace leash::tools::testing {

// Keeps every record. Thread-safe.
class CollectingSink : public engine::DecisionSink {
 public:
  void Record(leash::v1::DecisionRecord record) override {
    absl::MutexLock lock(&mu_);
    records_.push_back(std::move(record));
  }
  std::vector<leash::v1::DecisionRecord> records() const {
    absl::MutexLock lock(&mu_);
    return records_;
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return records_.size();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<leash::v1::DecisionRecord> records_ ABSL_GUARDED_BY(mu_);
};

// A ToolsService listening on `<dir>/tools.sock`, reached through a short symlink in /tmp
// (removed, with the server stopped, on destruction).
class ServiceHarness {
 public:
  static absl::StatusOr<std::unique_ptr<ServiceHarness>> Start(const std::string& dir,
                                                               ToolsServiceOptions options);
  ~ServiceHarness();

  // "unix:/tmp/leash-tools-XXXXXX/tools.sock"
  const std::string& target() const { return target_; }
  // The socket as it lies under `dir`.
  const std::string& socket_path() const { return socket_path_; }
  const ToolsService& service() const { return *service_; }

 private:
  ServiceHarness() = default;
  std::string link_;
  std::string target_;
  std::string socket_path_;
  std::unique_ptr<ToolsService> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace leash::tools::testing
