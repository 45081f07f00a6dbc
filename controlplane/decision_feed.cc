#include "controlplane/decision_feed.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/sidecar/decision_log.h"

namespace leash::controlplane {
namespace {

// A writer sends no datagram longer than this (proto/sidecar/decision_log.h); a longer one
// would be cut short here.
constexpr size_t kMaxDatagram = sidecar::kMaxFeedDatagram;
// The reading thread's nice value. It does the hub's work for every watcher (each line parsed
// while one is subscribed, even one whose queue is full), which on a busy host competes for the
// CPU with the sidecars answering the kernel and the agents; test/leashd's
// decision_stream_sidecars_benchmark measures that cost. Lowered, the thread yields to them
// when the CPU is contended, and a feed it has not drained in time is its writers' counted drop
// (rule L3 in docs/ARCHITECTURE.md), never an answer held up.
constexpr int kReaderNice = 10;

}  // namespace

absl::StatusOr<std::unique_ptr<DecisionFeed>> DecisionFeed::Start(DecisionHub* hub) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::ErrnoToStatus(errno, "epoll_create1 for the decision feed");
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const int error = errno;
    close(epoll_fd);
    return absl::ErrnoToStatus(error, "eventfd for the decision feed");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = stop_fd;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_fd, &event) != 0) {
    const int error = errno;
    close(stop_fd);
    close(epoll_fd);
    return absl::ErrnoToStatus(error, "epoll_ctl for the decision feed");
  }
  return std::unique_ptr<DecisionFeed>(new DecisionFeed(hub, epoll_fd, stop_fd));
}

DecisionFeed::DecisionFeed(DecisionHub* hub, int epoll_fd, int stop_fd)
    : hub_(hub), epoll_fd_(epoll_fd), stop_fd_(stop_fd) {
  reader_ = std::thread([this] { ReadLoop(); });
}

DecisionFeed::~DecisionFeed() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  reader_.join();
  close(stop_fd_);
  close(epoll_fd_);
  absl::MutexLock lock(&ends_mu_);
  for (int fd : ends_) close(fd);
}

absl::StatusOr<int> DecisionFeed::NewWriterEnd() {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    return absl::ErrnoToStatus(errno, "socketpair for the decision feed");
  }
  // Room for a burst while this thread is busy; refused is fine (the default still works).
  const int bytes = 4 << 20;
  setsockopt(pair[0], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  // Only leashd's end reads; the writer's end only sends.
  shutdown(pair[0], SHUT_WR);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = pair[0];
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, pair[0], &event) != 0) {
    const int error = errno;
    close(pair[0]);
    close(pair[1]);
    return absl::ErrnoToStatus(error, "epoll_ctl for the decision feed");
  }
  absl::MutexLock lock(&ends_mu_);
  ends_.push_back(pair[0]);
  return pair[1];
}

void DecisionFeed::ReadLoop() {
  // Per thread on Linux: the tid names this thread alone. Lowering is always permitted; should
  // it fail, the thread reads at leashd's own priority, as before.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kReaderNice);
  std::string buffer(kMaxDatagram, '\0');
  epoll_event events[16];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, 16, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd_) {
        stop = true;
        continue;
      }
      for (;;) {
        const ssize_t got = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (got < 0) break;  // EAGAIN: drained
        datagrams_.fetch_add(1, std::memory_order_relaxed);
        // The datagram's lines go on as one batch (DecisionHub::PublishLines).
        hub_->PublishLines(absl::string_view(buffer.data(), static_cast<size_t>(got)));
      }
    }
    if (stop) break;
  }
}

}  // namespace leash::controlplane
