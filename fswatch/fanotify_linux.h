// The real FanotifySource: one fanotify group (FAN_CLASS_CONTENT, FAN_UNLIMITED_QUEUE,
// FAN_REPORT_FD_ERROR where the kernel has it, and FAN_REPORT_PIDFD on kernels without
// PIDFD_GET_INFO), answered one write per event. The
// group is read blocking (see FanotifySource::ReadEvents).
//
// Why each flag:
// - FAN_UNLIMITED_QUEUE: when a bounded queue is full the kernel drops the event and the open
//   goes ahead unjudged, so an agent with enough threads parked in opens could overflow the
//   queue and walk past the watcher. Unlimited, a permission event always waits for an answer.
// - FAN_REPORT_PIDFD (kernel >= 5.15), only where PIDFD_GET_INFO (6.13) is missing: a pidfd
//   with each event names the process for good, so the UID read from /proc can be checked
//   against it. With PIDFD_GET_INFO the loop keeps its own pidfds instead (PidfdCache, which
//   explains why that is as race-free) and asks the kernel for none per event.
// - event_f_flags O_NONBLOCK: the kernel opens the file again for the watcher; a FIFO opened
//   for writing by the agent would otherwise make that open wait for a writer that is itself
//   waiting for the watcher's answer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "proto/sidecar/watcher_handover.h"
#include "fswatch/fanotify_source.h"
#include "fswatch/pidfd_identity.h"

namespace leash::fswatch {

enum class IdentityPreference {
  kBest,       // PidfdCache when the kernel has PIDFD_GET_INFO, else the pidfd-checked /proc read
  kProcStatus, // /proc/<pid>/status even where pidfds exist (tests the fallback for real)
};

// How the loop tells a mount of its own namespace from another namespace's.
enum class MountCheck {
  // statx(STATX_MNT_ID_UNIQUE) + statmount(2) (kernel >= 6.8): statmount only finds mounts of
  // the caller's namespace, and unique mount ids are never reused.
  kStatmount,
  // Not available: paths are judged as reported (a bind mount made in another namespace can
  // then present a denied file under an allowed name).
  kNone,
};

// The pidfd an event's FAN_EVENT_INFO_TYPE_PIDFD record carries, as FanEvent holds it. The
// kernel writes FAN_NOPIDFD (-1) when the process has already exited (or is not visible from
// the watcher's PID namespace) — kPidfdGone, so the event is never attributed through a /proc
// read of a PID that may be someone else's by now — and FAN_EPIDFD (-2) when making the pidfd
// failed (the watcher out of descriptors) while the process lives — kNoPidfd: the /proc read
// goes ahead unchecked, with the race of kernels that report no pidfds.
int PidfdFromInfoRecord(int reported);

// What a takeover found of its predecessor's events (FanotifyLinux::AnswerAbandoned).
struct AbandonedCounts {
  // Events answered (read by the predecessor and never answered).
  uint64_t answered = 0;
  // Descriptor numbers a response was written for.
  uint64_t numbers_tried = 0;
  // The predecessor died inside a read, before noting what it read: every number was tried.
  bool every_number = false;
};

class FanotifyLinux : public FanotifySource {
 public:
  // Makes the group. PermissionDenied without CAP_SYS_ADMIN; Unimplemented where the kernel
  // has no fanotify permission events.
  static absl::StatusOr<std::unique_ptr<FanotifyLinux>> Open(IdentityPreference preference);
  // Takes the group leashd made and handed over as `group_fd` (the flags are read from the
  // kernel), noting pending events in `pending`. The process's RLIMIT_NOFILE must be at most
  // sidecar::kWatcherDescriptorLimit. InvalidArgument when `group_fd` is not such a group.
  static absl::StatusOr<std::unique_ptr<FanotifyLinux>> Adopt(int group_fd,
                                                              IdentityPreference preference,
                                                              sidecar::PendingTable* pending);
  ~FanotifyLinux() override;

  int group_fd() const { return fd_; }
  MountCheck mount_check() const { return mount_check_; }
  // Whether an event the kernel cannot open the file of still comes with its pid
  // (FAN_REPORT_FD_ERROR, kernel >= 6.13); without it only the read's error says so.
  bool reports_open_errors() const { return fd_errors_; }
  size_t pidfd_cache_slots() const { return pidfds_.slots(); }

  int ReadEvents(absl::Span<FanEvent> out, int timeout_ms) override;
  int Respond(const FanEvent& event, bool allow) override;
  void NoteSubject(const FanEvent& event, uint32_t uid) override;
  // A takeover, before the first read: answers every event the previous reader of the group
  // read and left unanswered, by its descriptor number, with `allow(noted)` (noted: the
  // pending table's value for the number, 0 when the predecessor died before noting it);
  // `answered` is told of each. Not for the loop; nothing else may read the group meanwhile.
  AbandonedCounts AnswerAbandoned(absl::FunctionRef<bool(uint64_t noted)> allow,
                                  absl::FunctionRef<void(uint64_t noted, bool allowed)> answered);
  void ReleaseAll(absl::Span<const FanEvent> events) override;
  int CredsOf(const FanEvent& event, Creds& out) override;
  int PathOf(const FanEvent& event, char* buffer, size_t capacity, size_t& len) override;
  int FactsOf(const FanEvent& event, FileFacts& out) override;
  int ContentOf(const FanEvent& event, size_t limit, std::string& out) override;
  int IsRootControlled(const FanEvent& event, absl::string_view path, const FileFacts& facts,
                       bool& out) override;
  int ElfInterpreterOf(const FanEvent& event, char* buffer, size_t capacity,
                       size_t& len) override;
  int HostIdentityOf(const char* path, uint64_t& dev, uint64_t& ino) override;
  int IsLoadingElfInterpreter(const FanEvent& event, bool& out) override;
  IdentityMethod identity_method() const override { return identity_; }
  absl::Status MarkFilesystem(const std::string& path) override;
  absl::Status UnmarkFilesystem(const std::string& path) override;

 private:
  static absl::StatusOr<std::unique_ptr<FanotifyLinux>> Build(int fd, unsigned flags,
                                                              IdentityPreference preference,
                                                              sidecar::PendingTable* pending);
  FanotifyLinux(int fd, int proc_fd_dir, IdentityMethod identity, MountCheck mount_check,
                size_t pidfd_slots, bool fd_errors, sidecar::PendingTable* pending);
  bool MountIsOurs(uint64_t unique_id, bool& ours);

  const int fd_;
  const int proc_fd_dir_;  // /proc/self/fd
  const IdentityMethod identity_;
  const MountCheck mount_check_;
  const bool fd_errors_;
  // Null for a group of the watcher's own (tests); else shared with leashd and every watcher.
  sidecar::PendingTable* const pending_;
  std::vector<char> buffer_;
  std::vector<int> release_fds_;  // ReleaseAll's scratch, sized before the marks
  // Loop thread only: the pidfds of recently seen processes (IdentityMethod::kPidfdCache).
  PidfdCache pidfds_;
  // Loop thread only: unique ids of mounts confirmed to be in our namespace, forgotten every
  // second so a mount lazily unmounted since is not trusted for long.
  std::array<uint64_t, 64> ours_cache_{};
  int64_t ours_cache_epoch_ = 0;
};

// Reads the creds of `pid` from /proc/<pid>/status into `out` without allocating.
int ReadProcStatusCreds(pid_t pid, Creds& out);

}  // namespace leash::fswatch
