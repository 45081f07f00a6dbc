// A tiny DNS server for the DNS filter's tests and benchmark: UDP and TCP on one address, port
// 53, answering from a table (A/AAAA by name, a TTL of 60), NXDOMAIN for any other name, and
// counting the questions it saw by name, so a test can tell a name never reached it. It answers
// UDP whatever the asker's size (the filter is what truncates). Runs on its own thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace leash::testing {

class TestResolver {
 public:
  // name -> addresses (IPv4 and IPv6 text).
  using Table = std::map<std::string, std::vector<std::string>>;

  // Binds `ip`:53 (UDP and TCP) in the calling thread's network namespace.
  static absl::StatusOr<std::unique_ptr<TestResolver>> Start(const std::string& ip, Table table);
  ~TestResolver();

  // Questions seen for `name` (lowercase), over either transport.
  int Asked(const std::string& name) const;
  int asked_total() const;

 private:
  TestResolver(Table table) : table_(std::move(table)) {}
  void Serve();
  std::string AnswerTo(const std::string& query);

  const Table table_;
  int udp_fd_ = -1;
  int tcp_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::map<std::string, int> asked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::testing
