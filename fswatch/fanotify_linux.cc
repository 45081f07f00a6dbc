#include "fswatch/fanotify_linux.h"

#include <fcntl.h>
#include <linux/fanotify.h>
#include <sys/fanotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "proto/sidecar/watcher_handover.h"
#include "fswatch/exec_facts.h"
#include "fswatch/pidfd_identity.h"
#include "fswatch/proc_status.h"

namespace leash::fswatch {
constexpr unsigned kFanReportFdError = 0x00002000;  // FAN_REPORT_FD_ERROR, Linux 6.13

namespace {

// Debian 12's kernel headers predate these (Linux 6.8 and 6.13); the values are the kernel's
// uapi ones.
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif
constexpr long kSysStatmount = 457;  // x86_64, Linux >= 6.8
constexpr long kSysPidfdSendSignal = 424;
constexpr long kSysCloseRange = 436;  // Linux >= 5.9

struct MntIdReq {
  uint32_t size;
  uint32_t spare;
  uint64_t mnt_id;
  uint64_t param;
};
constexpr uint32_t kMntIdReqSizeVer0 = 24;
constexpr uint64_t kStatmountSbBasic = 0x1;

// The pidfd cache holds one descriptor a slot: a quarter of what the process may open, at most
// 4,096 processes (a host's busy set; the rest reopen a pidfd on their next event).
size_t PidfdCacheSlots() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return 256;
  const rlim_t quarter = files.rlim_cur == RLIM_INFINITY ? 4096 : files.rlim_cur / 4;
  return static_cast<size_t>(quarter < 4096 ? quarter : 4096);
}

int64_t CoarseMonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return ts.tv_sec;
}

bool StatmountWorks() {
  struct statx stx;
  if (statx(AT_FDCWD, "/", AT_NO_AUTOMOUNT, STATX_MNT_ID_UNIQUE, &stx) != 0) return false;
  if (!(stx.stx_mask & STATX_MNT_ID_UNIQUE)) return false;
  MntIdReq req{kMntIdReqSizeVer0, 0, stx.stx_mnt_id, kStatmountSbBasic};
  alignas(8) char buffer[1024];
  return syscall(kSysStatmount, &req, buffer, sizeof(buffer), 0) == 0;
}

}  // namespace

int ReadProcStatusCreds(pid_t pid, Creds& out) {
  char path[32];
  snprintf(path, sizeof(path), "/proc/%d/status", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? ESRCH : errno;
  // The Uid and Gid lines come within the first kilobyte; 4 KiB holds the whole file's head.
  char text[4096];
  size_t len = 0;
  while (len < sizeof(text)) {
    const ssize_t n = read(fd, text + len, sizeof(text) - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  close(fd);
  return ParseProcStatusCreds(text, len, out);
}

absl::StatusOr<std::unique_ptr<FanotifyLinux>> FanotifyLinux::Open(
    IdentityPreference preference) {
  // With PIDFD_GET_INFO the loop keeps its own pidfds (PidfdCache) and the events need none;
  // without it, the event's pidfd is what makes the /proc read race-free.
  const bool cache = preference == IdentityPreference::kBest && PidfdCredsWork();
  absl::StatusOr<sidecar::PermissionGroup> group = sidecar::OpenPermissionGroup(!cache);
  if (!group.ok()) return group.status();
  return Build(group->fd, group->flags, preference, nullptr);
}

absl::StatusOr<std::unique_ptr<FanotifyLinux>> FanotifyLinux::Adopt(
    int group_fd, IdentityPreference preference, sidecar::PendingTable* pending) {
  absl::StatusOr<unsigned> flags = sidecar::PermissionGroupFlags(group_fd);
  if (!flags.ok()) return flags.status();
  if ((*flags & FAN_CLASS_CONTENT) == 0 || (*flags & FAN_UNLIMITED_QUEUE) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the fanotify group on descriptor ", group_fd, " has flags 0x", absl::Hex(*flags),
        "; a watcher needs FAN_CLASS_CONTENT and FAN_UNLIMITED_QUEUE (made by "
        "sidecar::OpenPermissionGroup)"));
  }
  fcntl(group_fd, F_SETFD, FD_CLOEXEC);
  return Build(group_fd, *flags, preference, pending);
}

absl::StatusOr<std::unique_ptr<FanotifyLinux>> FanotifyLinux::Build(
    int fd, unsigned flags, IdentityPreference preference, sidecar::PendingTable* pending) {
  // Opened now, before any mark: readlinkat() on it names an event's file with one path step.
  const int proc_fd_dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc_fd_dir < 0) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error, "open /proc/self/fd (is /proc mounted?)");
  }
  const bool cache = preference == IdentityPreference::kBest && PidfdCredsWork();
  IdentityMethod identity = IdentityMethod::kProcStatus;
  if (cache) {
    identity = IdentityMethod::kPidfdCache;
  } else if (flags & FAN_REPORT_PIDFD) {
    identity = IdentityMethod::kProcStatusPidfdChecked;
  }
  const MountCheck check = StatmountWorks() ? MountCheck::kStatmount : MountCheck::kNone;
  return std::unique_ptr<FanotifyLinux>(
      new FanotifyLinux(fd, proc_fd_dir, identity, check, cache ? PidfdCacheSlots() : 0,
                        (flags & kFanReportFdError) != 0, pending));
}

int PidfdFromInfoRecord(int reported) {
  if (reported >= 0) return reported;
  if (reported == FAN_NOPIDFD) return FanEvent::kPidfdGone;
  return FanEvent::kNoPidfd;  // FAN_EPIDFD, or anything else negative
}

FanotifyLinux::FanotifyLinux(int fd, int proc_fd_dir, IdentityMethod identity,
                             MountCheck mount_check, size_t pidfd_slots, bool fd_errors,
                             sidecar::PendingTable* pending)
    : fd_(fd),
      proc_fd_dir_(proc_fd_dir),
      identity_(identity),
      mount_check_(mount_check),
      fd_errors_(fd_errors),
      pending_(pending),
      pidfds_(pidfd_slots) {}

FanotifyLinux::~FanotifyLinux() {
  close(proc_fd_dir_);
  close(fd_);
}

int FanotifyLinux::ReadEvents(absl::Span<FanEvent> out, int timeout_ms) {
  // Every event is at least one metadata record long, so this buffer never yields more events
  // than `out` holds.
  const size_t want = out.size() * sizeof(fanotify_event_metadata);
  if (buffer_.size() != want) {  // first pass only: sized before the marks
    buffer_.resize(want);
    release_fds_.reserve(2 * out.size());
  }
  // Blocking: one syscall per wake-up. A signal (leash-fswatch's once-a-second kick) ends the
  // wait with EINTR, which is a pass with no events.
  // Until every descriptor this read gives is noted, a takeover must answer every number.
  if (pending_ != nullptr) pending_->SetReading(true);
  const ssize_t n = read(fd_, buffer_.data(), buffer_.size());
  if (n < 0) {
    const int error = errno;
    if (pending_ != nullptr) pending_->SetReading(false);
    if (error == EAGAIN || error == EINTR) return 0;
    // The group itself: our own bug, or the group is gone. Nothing more can be read.
    if (error == EBADF || error == EFAULT || error == EINVAL) return -error;
    // Anything else is the kernel failing to open the first pending event's file for us
    // (without FAN_REPORT_FD_ERROR it then denies that event itself and returns the open's
    // error from read). That is one event, not a broken group: any user can raise it with a
    // 0:0 device node, so treating it as fatal would let them stop the watcher at will.
    if (out.empty()) return 0;
    out[0] = FanEvent{};
    out[0].fd = FAN_NOFD;
    out[0].open_error = error;
    return 1;
  }

  size_t count = 0;
  const char* at = buffer_.data();
  ssize_t left = n;
  auto* meta = reinterpret_cast<const fanotify_event_metadata*>(at);
  while (FAN_EVENT_OK(meta, left) && count < out.size()) {
    if (meta->vers != FANOTIFY_METADATA_VERSION) return -EPROTO;
    FanEvent& event = out[count++];
    event = FanEvent{};  // the slot may hold an earlier pass's event (an open_error above)
    event.mask = meta->mask;
    event.fd = meta->fd;
    event.pid = meta->pid;
    if (fd_errors_ && meta->fd < 0 && !(meta->mask & FAN_Q_OVERFLOW)) {
      // FAN_REPORT_FD_ERROR: the kernel could not open the file for us and has denied the
      // event itself (a response to it is refused with EINVAL); -errno stands for the fd.
      event.open_error = -meta->fd;
      event.fd = FAN_NOFD;
    }
    event.pidfd = FanEvent::kNoPidfd;
    // Info records follow the metadata up to event_len.
    size_t offset = meta->metadata_len;
    while (offset + sizeof(fanotify_event_info_header) <= meta->event_len) {
      const auto* header = reinterpret_cast<const fanotify_event_info_header*>(
          reinterpret_cast<const char*>(meta) + offset);
      if (header->len == 0) break;
      if (header->info_type == FAN_EVENT_INFO_TYPE_PIDFD &&
          offset + sizeof(fanotify_event_info_pidfd) <= meta->event_len) {
        event.pidfd = PidfdFromInfoRecord(
            reinterpret_cast<const fanotify_event_info_pidfd*>(header)->pidfd);
      }
      offset += header->len;
    }
    if (pending_ != nullptr) pending_->Note(event.fd, sidecar::PendingTable::kReadUnknown);
    meta = FAN_EVENT_NEXT(meta, left);
  }
  if (pending_ != nullptr) pending_->SetReading(false);
  return static_cast<int>(count);
}

int FanotifyLinux::Respond(const FanEvent& event, bool allow) {
  fanotify_response response{};
  response.fd = event.fd;
  response.response = allow ? FAN_ALLOW : FAN_DENY;
  for (;;) {
    const ssize_t n = write(fd_, &response, sizeof(response));
    if (n < 0 && errno == EINTR) continue;
    if (pending_ != nullptr) pending_->Note(event.fd, 0);
    if (n == static_cast<ssize_t>(sizeof(response))) return 0;
    return n < 0 ? errno : EIO;
  }
}

void FanotifyLinux::NoteSubject(const FanEvent& event, uint32_t uid) {
  if (pending_ != nullptr) {
    pending_->Note(event.fd, sidecar::PendingTable::kSubject | uid);
  }
}

AbandonedCounts FanotifyLinux::AnswerAbandoned(
    absl::FunctionRef<bool(uint64_t noted)> allow,
    absl::FunctionRef<void(uint64_t noted, bool allowed)> answered) {
  AbandonedCounts counts;
  if (pending_ == nullptr) return counts;
  const bool every_number = pending_->reading();
  counts.every_number = every_number;
  for (uint32_t number = 0; number < sidecar::kWatcherDescriptorLimit; ++number) {
    const int fd = static_cast<int>(number);
    const uint64_t noted = pending_->At(fd);
    if (noted == 0 && !every_number) continue;
    const bool verdict = allow(noted);
    fanotify_response response{};
    response.fd = fd;
    response.response = verdict ? FAN_ALLOW : FAN_DENY;
    // One pending event per number is what a reader leaves, but a chain of takeovers that died
    // midway could leave more: answered until the kernel has none (ENOENT).
    for (int tries = 0; tries < 64; ++tries) {
      const ssize_t n = write(fd_, &response, sizeof(response));
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof(response))) break;
      ++counts.answered;
      answered(noted, verdict);
    }
    ++counts.numbers_tried;
    pending_->Note(fd, 0);
  }
  pending_->SetReading(false);
  return counts;
}

void FanotifyLinux::ReleaseAll(absl::Span<const FanEvent> events) {
  release_fds_.clear();
  for (const FanEvent& event : events) {
    if (event.fd >= 0) release_fds_.push_back(event.fd);
    if (event.pidfd >= 0) release_fds_.push_back(event.pidfd);
  }
  std::sort(release_fds_.begin(), release_fds_.end());
  // close_range only over numbers that are all the batch's own: a run of consecutive
  // descriptors. A gap may hold anything (the group, the log), so runs stop at gaps.
  size_t run = 0;
  for (size_t i = 1; i <= release_fds_.size(); ++i) {
    if (i < release_fds_.size() && release_fds_[i] == release_fds_[i - 1] + 1) continue;
    const int first = release_fds_[run];
    const int last = release_fds_[i - 1];
    if (first == last || syscall(kSysCloseRange, first, last, 0) != 0) {
      for (int fd = first; fd <= last; ++fd) close(fd);
    }
    run = i;
  }
}

int FanotifyLinux::CredsOf(const FanEvent& event, Creds& out) {
  if (identity_ == IdentityMethod::kPidfdCache) return pidfds_.CredsOf(event.pid, out);
  if (event.pidfd == FanEvent::kPidfdGone) return ESRCH;
  if (const int error = ReadProcStatusCreds(event.pid, out); error != 0) return error;
  if (identity_ == IdentityMethod::kProcStatusPidfdChecked && event.pidfd >= 0) {
    // The pidfd pins the process the event came from: if it is still alive after the read,
    // the PID we read cannot have been handed to another process in between.
    if (syscall(kSysPidfdSendSignal, event.pidfd, 0, nullptr, 0) != 0) return ESRCH;
  }
  return 0;
}

int FanotifyLinux::PathOf(const FanEvent& event, char* buffer, size_t capacity, size_t& len) {
  if (event.fd < 0) return EBADF;
  char name[16];
  snprintf(name, sizeof(name), "%d", event.fd);
  const ssize_t n = readlinkat(proc_fd_dir_, name, buffer, capacity);
  if (n < 0) return errno;
  if (static_cast<size_t>(n) >= capacity) return ENAMETOOLONG;
  len = static_cast<size_t>(n);
  return 0;
}

bool FanotifyLinux::MountIsOurs(uint64_t unique_id, bool& ours) {
  const int64_t now = CoarseMonotonicSeconds();
  if (now != ours_cache_epoch_) {
    ours_cache_.fill(0);
    ours_cache_epoch_ = now;
  }
  uint64_t& slot = ours_cache_[unique_id % ours_cache_.size()];
  if (slot == unique_id) {
    ours = true;
    return true;
  }
  MntIdReq req{kMntIdReqSizeVer0, 0, unique_id, kStatmountSbBasic};
  alignas(8) char result[1024];
  if (syscall(kSysStatmount, &req, result, sizeof(result), 0) == 0) {
    slot = unique_id;
    ours = true;
    return true;
  }
  if (errno == ENOENT) {
    ours = false;
    return true;
  }
  return false;
}

int FanotifyLinux::ContentOf(const FanEvent& event, size_t limit, std::string& out) {
  out.clear();
  char chunk[16384];
  while (true) {
    const ssize_t n = pread(event.fd, chunk, sizeof(chunk), static_cast<off_t>(out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    if (out.size() + static_cast<size_t>(n) > limit) return EFBIG;
    out.append(chunk, static_cast<size_t>(n));
  }
}

int FanotifyLinux::FactsOf(const FanEvent& event, FileFacts& out) {
  if (event.fd < 0) return EBADF;
  struct statx stx;
  // AT_STATX_DONT_SYNC: cached attributes only, so a network or FUSE filesystem is never asked.
  const unsigned mask = STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_INO |
                        (mount_check_ == MountCheck::kStatmount ? STATX_MNT_ID_UNIQUE : 0);
  if (statx(event.fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, mask, &stx) != 0) {
    return errno;
  }
  out.regular = S_ISREG(stx.stx_mode);
  out.nlink = stx.stx_nlink;
  out.uid = stx.stx_uid;
  out.gid = stx.stx_gid;
  out.mode = stx.stx_mode;
  out.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  out.ino = stx.stx_ino;
  out.mount = FileFacts::Mount::kUnknown;
  if (mount_check_ == MountCheck::kStatmount) {
    bool ours = false;
    if (!(stx.stx_mask & STATX_MNT_ID_UNIQUE) || !MountIsOurs(stx.stx_mnt_id, ours)) {
      // Could not tell: treated as another namespace's (judged under fail_mode), not as ours.
      out.mount = FileFacts::Mount::kForeign;
    } else {
      out.mount = ours ? FileFacts::Mount::kOurs : FileFacts::Mount::kForeign;
    }
  }
  return 0;
}

// FAN_ONDIR: without it the kernel raises no event for opening a directory, so a listing
// (opendir, getdents) of a denied folder would never be judged.
constexpr uint64_t kMarkMask = FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM | FAN_ONDIR;

int FanotifyLinux::IsRootControlled(const FanEvent& event, absl::string_view path,
                                    const FileFacts& facts, bool& out) {
  out = false;
  if (event.fd < 0) return EBADF;
  return RootControlledProgram(event.fd, path, facts.uid, facts.mode, facts.dev, facts.ino, out);
}

int FanotifyLinux::ElfInterpreterOf(const FanEvent& event, char* buffer, size_t capacity,
                                    size_t& len) {
  len = 0;
  if (event.fd < 0) return EBADF;
  return ReadElfInterpreter(event.fd, buffer, capacity, len);
}

int FanotifyLinux::HostIdentityOf(const char* path, uint64_t& dev, uint64_t& ino) {
  return IdentityOnHost(path, dev, ino);
}

int FanotifyLinux::IsLoadingElfInterpreter(const FanEvent& event, bool& out) {
  return LoadingElfInterpreter(event.pid, out);
}

absl::Status FanotifyLinux::MarkFilesystem(const std::string& path) {
  if (fanotify_mark(fd_, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, kMarkMask, AT_FDCWD,
                    path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("fanotify_mark(FAN_MARK_FILESYSTEM) ", path));
  }
  return absl::OkStatus();
}

absl::Status FanotifyLinux::UnmarkFilesystem(const std::string& path) {
  if (fanotify_mark(fd_, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, kMarkMask, AT_FDCWD,
                    path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("fanotify_mark(FAN_MARK_REMOVE) ", path));
  }
  return absl::OkStatus();
}

}  // namespace leash::fswatch
