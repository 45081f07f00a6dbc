// How decisions reach leashd as they happen: one AF_UNIX datagram socket pair per writer (each
// sidecar, and leashd's own tools log). The writer's end goes to its AsyncDecisionLog, which
// sends each batch it has written to the log without waiting (proto/sidecar/decision_log.h);
// leashd's end is read here, by one thread, and every line goes to the DecisionHub. The
// socket's queue is each writer's bounded buffer: what does not fit is the writer's to count.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "absl/status/statusor.h"
#include "controlplane/decision_hub.h"

namespace leash::controlplane {

class DecisionFeed {
 public:
  // Starts the reading thread. `hub` outlives the feed.
  static absl::StatusOr<std::unique_ptr<DecisionFeed>> Start(DecisionHub* hub);
  // Stops the thread and closes leashd's ends.
  ~DecisionFeed();

  // A new pair: returns the writer's end (close-on-exec, the caller owns it); leashd reads the
  // other from now on. Thread-safe.
  absl::StatusOr<int> NewWriterEnd();

  // Datagrams read since start.
  uint64_t datagrams() const { return datagrams_.load(std::memory_order_relaxed); }

 private:
  DecisionFeed(DecisionHub* hub, int epoll_fd, int stop_fd);
  void ReadLoop();

  DecisionHub* const hub_;
  const int epoll_fd_;
  const int stop_fd_;
  std::atomic<uint64_t> datagrams_{0};
  absl::Mutex ends_mu_;
  std::vector<int> ends_ ABSL_GUARDED_BY(ends_mu_);
  std::thread reader_;
};

}  // namespace leash::controlplane
