// leashd's own reader of the fanotify group, for the times no watcher may read it and the
// group must still not be closed (closing answers every pending event allow and takes the
// marks with it): after leashd gives up on the watcher, and while a new leashd takes over the
// group its killed predecessor's watchers held. It judges nothing but whose event it is: an
// event whose opener's real UID is a subject's is denied, any other allowed (so the host, root
// and every unleashed user, goes on). It opens nothing but /proc/<pid>/status (procfs is never
// marked), so it never waits on the group it reads.
//
// Only one reader at a time may read a group: the kernel matches a response to an event by
// its descriptor number alone, so two readers in two processes could answer each other's
// events. Whoever starts a watcher after this reader stops it first (the watcher then reads
// as a standby that takes over).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "proto/sidecar/watcher_handover.h"

namespace leash::controlplane {

class HoldingReader {
 public:
  // Whether `uid` is a subject's: its events are denied. Called on the reader's thread; must
  // not open files.
  using IsSubject = std::function<bool(uint32_t uid)>;

  // Starts reading `group_fd` (which the caller keeps open) on a thread of its own. First it
  // answers every event a dead reader left in `pending` (the pending table): denied unless the
  // table names a UID that is no subject's; every number when the reader died inside a read.
  static absl::StatusOr<std::unique_ptr<HoldingReader>> Start(int group_fd,
                                                              sidecar::PendingTable* pending,
                                                              IsSubject is_subject);
  ~HoldingReader();  // Stop()s

  // Stops reading; every event it read is answered when this returns, and none is read after.
  void Stop();

  uint64_t denied() const { return denied_.load(); }
  uint64_t allowed() const { return allowed_.load(); }
  uint64_t left_over_answered() const { return left_over_.load(); }

 private:
  HoldingReader(int group_fd, int wake_fd, sidecar::PendingTable* pending, IsSubject is_subject);
  void AnswerLeftOvers();
  void Run();
  // Answers the events in `buffer[0, n)` and closes their descriptors.
  void AnswerBatch(const char* buffer, ssize_t n);
  void Respond(int fd, bool allow);

  const int group_fd_;
  const int wake_fd_;  // an eventfd: Stop() ends the wait on it
  sidecar::PendingTable* const pending_;
  const IsSubject is_subject_;
  std::atomic<uint64_t> denied_{0}, allowed_{0}, left_over_{0};
  std::thread thread_;
};

// The real UID of process `pid` ("Uid:" in /proc/<pid>/status), or nullopt when it cannot be
// read (the process is gone).
std::optional<uint32_t> RealUidOf(pid_t pid);

}  // namespace leash::controlplane
