// The notify socket systemd gives a Type=notify service (NOTIFY_SOCKET), played by a test: it
// keeps every descriptor sent with FDSTORE=1 (by FDNAME), as systemd's file-descriptor store
// does, for the test to hand back on the next start, and keeps every other message (READY=1,
// WATCHDOG=1, STOPPING=1, ...) in order for the test to read. It reads on a thread of its own
// from the moment it is made, as systemd does: a service's notify calls never wait on the test.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leash::testing {

class FakeNotifySocket {
 public:
  explicit FakeNotifySocket(const std::string& path);
  ~FakeNotifySocket();
  bool bound() const { return bound_; }
  // The descriptors stored (each kernel object once), and their FDNAMEs.
  size_t size();
  std::vector<int> fds();
  std::vector<std::string> names();
  // The next message that stored nothing, waiting up to `timeout`; "" when none came.
  std::string NextMessage(absl::Duration timeout);

 private:
  void Read();

  const std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::thread reader_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  // (device, inode) of every descriptor in fds_.
  std::set<std::pair<dev_t, ino_t>> kept_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> messages_ ABSL_GUARDED_BY(mu_);
  size_t next_message_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leash::testing
