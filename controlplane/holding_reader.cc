#include "controlplane/holding_reader.h"

#include <fcntl.h>
#include <linux/fanotify.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace leash::controlplane {
namespace {

// Every permission event this group's marks can raise (FAN_ALL_PERM_EVENTS, spelled out:
// the header's macro is kernel-internal on some versions).
constexpr uint64_t kPermissionEvents = FAN_OPEN_PERM | FAN_ACCESS_PERM | FAN_OPEN_EXEC_PERM;

}  // namespace

std::optional<uint32_t> RealUidOf(pid_t pid) {
  char path[48];
  snprintf(path, sizeof(path), "/proc/%d/status", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[4096];
  ssize_t n;
  do {
    n = read(fd, text, sizeof(text) - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text, n), '\n')) {
    if (!absl::ConsumePrefix(&line, "Uid:")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    uint32_t uid = 0;
    if (absl::SimpleAtoi(line.substr(0, line.find_first_of(" \t")), &uid)) return uid;
    return std::nullopt;
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<HoldingReader>> HoldingReader::Start(
    int group_fd, sidecar::PendingTable* pending, IsSubject is_subject) {
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return absl::ErrnoToStatus(errno, "eventfd for leashd's holding reader");
  std::unique_ptr<HoldingReader> reader(
      new HoldingReader(group_fd, wake, pending, std::move(is_subject)));
  reader->thread_ = std::thread([r = reader.get()] { r->Run(); });
  return reader;
}

HoldingReader::HoldingReader(int group_fd, int wake_fd, sidecar::PendingTable* pending,
                             IsSubject is_subject)
    : group_fd_(group_fd), wake_fd_(wake_fd), pending_(pending),
      is_subject_(std::move(is_subject)) {}

HoldingReader::~HoldingReader() {
  Stop();
  close(wake_fd_);
}

void HoldingReader::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  while (write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void HoldingReader::Respond(int fd, bool allow) {
  fanotify_response response{};
  response.fd = fd;
  response.response = allow ? FAN_ALLOW : FAN_DENY;
  while (write(group_fd_, &response, sizeof(response)) < 0 && errno == EINTR) {
  }
  (allow ? allowed_ : denied_).fetch_add(1);
}

// As a watcher taking over does (fswatch/fanotify_linux.cc, AnswerAbandoned), before the first
// read: this reader's own descriptors would take the numbers those events still hold.
void HoldingReader::AnswerLeftOvers() {
  if (pending_ == nullptr) return;
  const bool every_number = pending_->reading();
  for (uint32_t number = 0; number < sidecar::kWatcherDescriptorLimit; ++number) {
    const int fd = static_cast<int>(number);
    const uint64_t noted = pending_->At(fd);
    if (noted == 0 && !every_number) continue;
    // Denied unless the table says whose it was and that is no subject.
    const bool allow = (noted & sidecar::PendingTable::kSubject) != 0 &&
                       !is_subject_(static_cast<uint32_t>(noted));
    fanotify_response response{};
    response.fd = fd;
    response.response = allow ? FAN_ALLOW : FAN_DENY;
    for (int tries = 0; tries < 64; ++tries) {
      const ssize_t n = write(group_fd_, &response, sizeof(response));
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof(response))) break;
      left_over_.fetch_add(1);
    }
    pending_->Note(fd, 0);
  }
  pending_->SetReading(false);
}

void HoldingReader::AnswerBatch(const char* buffer, ssize_t n) {
  ssize_t left = n;
  auto* meta = reinterpret_cast<const fanotify_event_metadata*>(buffer);
  while (FAN_EVENT_OK(meta, left)) {
    // A pidfd the group reports (FAN_REPORT_PIDFD) is ours to close.
    size_t offset = meta->metadata_len;
    while (offset + sizeof(fanotify_event_info_header) <= meta->event_len) {
      const auto* header = reinterpret_cast<const fanotify_event_info_header*>(
          reinterpret_cast<const char*>(meta) + offset);
      if (header->len == 0) break;
      if (header->info_type == FAN_EVENT_INFO_TYPE_PIDFD &&
          offset + sizeof(fanotify_event_info_pidfd) <= meta->event_len) {
        const int pidfd = reinterpret_cast<const fanotify_event_info_pidfd*>(header)->pidfd;
        if (pidfd >= 0) close(pidfd);
      }
      offset += header->len;
    }
    // A negative fd is an event the kernel could not open the file of and denied itself
    // (FAN_REPORT_FD_ERROR), or an overflow: nothing to answer.
    if (meta->fd >= 0) {
      if ((meta->mask & kPermissionEvents) != 0) {
        // A process that cannot be looked up any more is denied: it is gone, or it is one
        // this reader cannot place, and a failure to decide is a block.
        const std::optional<uint32_t> uid = RealUidOf(meta->pid);
        Respond(meta->fd, uid.has_value() && !is_subject_(*uid));
      }
      close(meta->fd);
    }
    meta = FAN_EVENT_NEXT(meta, left);
  }
}

void HoldingReader::Run() {
  pthread_setname_np(pthread_self(), "leashd-hold");
  AnswerLeftOvers();
  std::vector<char> buffer(64 * 1024);
  pollfd fds[2] = {{group_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    const int ready = poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "leashd: holding reader: poll: %s\n", strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;  // Stop(): everything read so far is answered
    if (fds[0].revents == 0) continue;
    const ssize_t n = read(group_fd_, buffer.data(), buffer.size());
    if (n < 0) {
      const int error = errno;
      if (error == EINTR || error == EAGAIN) continue;
      if (error == EBADF || error == EINVAL || error == EFAULT) {
        fprintf(stderr, "leashd: holding reader: reading the group: %s\n", strerror(error));
        return;
      }
      // The kernel could not open the first event's file for us and denied it itself.
      continue;
    }
    AnswerBatch(buffer.data(), n);
  }
}

}  // namespace leash::controlplane
