// Who raised a fanotify event, learned through pidfds (Linux >= 6.13 for PIDFD_GET_INFO).
//
// PidfdCache is how the event loop learns the acting UID on the hot path: one pidfd per
// recently seen process, opened once, and one ioctl(PIDFD_GET_INFO) per event. The credentials
// are read anew on every event (a root process may setuid() into an agent's UID at any time,
// so credentials are never cached), only the pidfd is.
//
// Why a cached pidfd cannot attribute an event to a recycled PID. A pidfd names one process
// for good. Say the cache holds a pidfd for process Y, opened while Y held PID p, and an event
// E from PID p is being judged:
// - PIDFD_GET_INFO answers only while Y has not been reaped (ESRCH after), and a PID number
//   is only handed out again once its holder is reaped. So a successful ioctl at time T means
//   Y still held p at T, and E (raised before T) was raised either by Y, or by a process that
//   held p before Y did and has since been reaped. A reaped process waits for no answer: its
//   open was interrupted when it was killed, so the answer given to E reaches nobody.
// - On ESRCH the slot is reopened with pidfd_open(p): it names whoever holds p then. If E's
//   process is still alive that is E's process (a live process keeps its PID); if not,
//   again nobody waits for the answer.
// So the answer to a process that is waiting is always judged by that process's own
// credentials, read after the event was raised. A cache of UIDs keyed by PID would be neither
// (stale after setuid, wrong after reuse); this caches only the handle.
//
// The event's own pidfd (FAN_REPORT_PIDFD) gives the same guarantee, but then the kernel makes,
// and the loop must close, a pidfd for every event: on every open on the host, where this
// costs one ioctl (docs/PERFORMANCE.md, "Filesystem watcher").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <vector>

#include "fswatch/fanotify_source.h"

namespace leash::fswatch {

// pidfd_open(2): a pidfd for `pid`, or -errno.
int OpenPidfd(pid_t pid);

// ioctl(pidfd, PIDFD_GET_INFO) for the credentials: 0 or an errno (ESRCH: reaped).
int ReadPidfdCreds(int pidfd, Creds& out);

// Whether this kernel answers PIDFD_GET_INFO (tried on this process).
bool PidfdCredsWork();

class PidfdCache {
 public:
  // `slots`: how many processes' pidfds are kept (rounded down to a power of two, at least 1).
  // Each is one open descriptor; size it against RLIMIT_NOFILE. Allocates here only.
  explicit PidfdCache(size_t slots);
  ~PidfdCache();
  PidfdCache(const PidfdCache&) = delete;
  PidfdCache& operator=(const PidfdCache&) = delete;

  // The current credentials of the process holding `pid` (see the header comment for why a
  // recycled PID is never misattributed). 0 or an errno; ESRCH: nobody holds `pid`.
  // One thread only (the event loop). Never allocates.
  int CredsOf(pid_t pid, Creds& out);

  size_t slots() const { return slots_.size(); }
  // Descriptors held now (tests).
  size_t open_pidfds() const;

 private:
  struct Slot {
    pid_t pid = 0;
    int pidfd = -1;
  };
  Slot& SlotFor(pid_t pid) { return slots_[static_cast<size_t>(pid) & (slots_.size() - 1)]; }

  std::vector<Slot> slots_;
};

}  // namespace leash::fswatch
