// What leashd and leash-fswatch share so that the fanotify group outlives any one watcher
// process: the group itself (made by leashd, handed to every watcher), and the pending table, a
// small shared memory file in which the reading watcher notes which event descriptors it has
// read and not yet answered, and whose they are. When that watcher dies, the next one answers
// those events by their numbers (the kernel matches a response to a pending event by the number
// alone, whoever writes it) before it reads anything itself.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"

namespace leash::sidecar {

// The highest number of descriptors a watcher on a shared group may hold (its RLIMIT_NOFILE):
// every event descriptor it reads is below this, so the pending table has one slot per number
// and a takeover can reach every event its predecessor read.
inline constexpr uint32_t kWatcherDescriptorLimit = 16384;

// The signal leashd sends a standby watcher to make it the group's reader.
int TakeOverSignal();

struct PermissionGroup {
  int fd = -1;          // FAN_CLOEXEC
  unsigned flags = 0;   // the fanotify_init flags the kernel accepted
};

// Makes the permission-event group every watcher reads: FAN_CLASS_CONTENT, FAN_UNLIMITED_QUEUE
// (a bounded queue lets an overflowing permission event through unjudged), FAN_REPORT_FD_ERROR
// where the kernel has it (6.13), FAN_REPORT_PIDFD when `report_pidfds` (kernels >= 5.15; a
// kernel without it gets a group without), event files opened O_NONBLOCK (a FIFO opened for
// writing cannot wedge the watcher). PermissionDenied without CAP_SYS_ADMIN, Unimplemented
// without fanotify.
absl::StatusOr<PermissionGroup> OpenPermissionGroup(bool report_pidfds);

// The fanotify_init flags of the group `fd` ("fanotify flags:" in /proc/self/fdinfo/<fd>).
// InvalidArgument when `fd` is not a fanotify group.
absl::StatusOr<unsigned> PermissionGroupFlags(int fd);

// Whether ioctl(PIDFD_GET_INFO) (Linux 6.13) answers here: then a watcher learns UIDs through
// pidfds it keeps itself and the group need not report one per event.
bool KernelHasPidfdInfo();

// The pending table as laid out in its memfd.
class PendingTable {
 public:
  // A slot's value: 0 nothing pending under this number; kReadUnknown read, subject not yet
  // known; kSubject | uid read, raised by `uid`.
  static constexpr uint64_t kReadUnknown = 1;
  static constexpr uint64_t kSubject = uint64_t{1} << 32;

  // Makes the memfd (MFD_CLOEXEC, sealed against shrinking), zeroed. leashd keeps it.
  static absl::StatusOr<int> Create();
  // Maps the table in `fd` (checks its size). The mapping lives as long as the process.
  static absl::StatusOr<PendingTable*> Map(int fd);

  // Set by the reader around every read of the group, until each descriptor the read gave is
  // noted: a reader that dies with it set may have read events it never noted, and the next
  // one then answers every number.
  void SetReading(bool reading) { reading_.store(reading ? 1 : 0, std::memory_order_release); }
  bool reading() const { return reading_.load(std::memory_order_acquire) != 0; }
  void Note(int fd, uint64_t value) {
    if (fd >= 0 && static_cast<uint32_t>(fd) < kWatcherDescriptorLimit) {
      slots_[fd].store(value, std::memory_order_release);
    }
  }
  uint64_t At(int fd) const { return slots_[fd].load(std::memory_order_acquire); }

 private:
  PendingTable() = delete;
  std::atomic<uint32_t> reading_;
  uint32_t padding_;
  std::atomic<uint64_t> slots_[kWatcherDescriptorLimit];
};

}  // namespace leash::sidecar
