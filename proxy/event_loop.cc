#include "proxy/event_loop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace leash::proxy {
namespace {

// Handlers are at least 8-byte aligned, so the low 2 bits of the pointer carry the tag.
constexpr uintptr_t kTagMask = 3;
// The wake eventfd's registration (no handler is ever at address 0).
constexpr uint64_t kWakeToken = 0;

uint64_t Token(EventLoop::Handler* handler, unsigned tag) {
  return reinterpret_cast<uintptr_t>(handler) | (tag & kTagMask);
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventLoop>> EventLoop::Create() {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::ErrnoToStatus(errno, "epoll_create1");
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int error = errno;
    close(epoll_fd);
    return absl::ErrnoToStatus(error, "eventfd");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kWakeToken;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &event) != 0) {
    const int error = errno;
    close(wake_fd);
    close(epoll_fd);
    return absl::ErrnoToStatus(error, "epoll_ctl ADD eventfd");
  }
  return std::unique_ptr<EventLoop>(new EventLoop(epoll_fd, wake_fd));
}

EventLoop::~EventLoop() {
  for (Deletable* object : doomed_) delete object;
  close(wake_fd_);
  close(epoll_fd_);
}

absl::Status EventLoop::Control(int op, int fd, uint32_t events, Handler* handler, unsigned tag) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = Token(handler, tag);
  if (epoll_ctl(epoll_fd_, op, fd, &event) != 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("epoll_ctl ", op == EPOLL_CTL_ADD ? "ADD" : "MOD", " fd ", fd));
  }
  return absl::OkStatus();
}

absl::Status EventLoop::Add(int fd, uint32_t events, Handler* handler, unsigned tag) {
  return Control(EPOLL_CTL_ADD, fd, events, handler, tag);
}

absl::Status EventLoop::Modify(int fd, uint32_t events, Handler* handler, unsigned tag) {
  return Control(EPOLL_CTL_MOD, fd, events, handler, tag);
}

void EventLoop::Remove(int fd) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void EventLoop::ArmTimer(TimerHandle* handle, absl::Time deadline, TimerTarget* target) {
  CancelTimer(handle);
  handle->it_ = timers_.emplace(deadline, handle);
  handle->target_ = target;
  handle->armed_ = true;
}

void EventLoop::CancelTimer(TimerHandle* handle) {
  if (!handle->armed_) return;
  timers_.erase(handle->it_);
  handle->armed_ = false;
}

void EventLoop::DeleteSoon(Deletable* object) { doomed_.push_back(object); }

void EventLoop::Post(std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    posted_.push_back(std::move(task));
  }
  const uint64_t one = 1;
  // A full counter (never in practice) still leaves the eventfd readable: the wake happens.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void EventLoop::RunSync(const std::function<void()>& task) {
  if (InLoopThread()) {
    task();
    return;
  }
  absl::Notification done;
  Post([&] {
    task();
    done.Notify();
  });
  done.WaitForNotification();
}

void EventLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  Post([] {});
}

void EventLoop::RunPosted() {
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof(count));
  std::vector<std::function<void()>> tasks;
  {
    absl::MutexLock lock(&mu_);
    tasks.swap(posted_);
    stop_requested_ = stop_;
  }
  for (auto& task : tasks) task();
}

void EventLoop::FireTimers() {
  // A timer target may arm or cancel timers (its own or others'); take one at a time.
  while (!timers_.empty() && timers_.begin()->first <= now_) {
    auto it = timers_.begin();
    TimerHandle* handle = it->second;
    timers_.erase(it);
    handle->armed_ = false;
    handle->target_->OnTimer();
  }
}

void EventLoop::Run() {
  loop_thread_ = std::this_thread::get_id();
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  while (!stop_requested_) {
    int timeout_ms = -1;
    if (!timers_.empty()) {
      const absl::Duration left = timers_.begin()->first - absl::Now();
      timeout_ms = left <= absl::ZeroDuration()
                       ? 0
                       : static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
    }
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    now_ = absl::Now();
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const uint64_t token = events[i].data.u64;
      if (token == kWakeToken) {
        RunPosted();
        continue;
      }
      auto* handler = reinterpret_cast<Handler*>(token & ~kTagMask);
      handler->OnEvents(events[i].events, static_cast<unsigned>(token & kTagMask));
    }
    FireTimers();
    for (Deletable* object : doomed_) delete object;
    doomed_.clear();
  }
  // Work posted after the stop still runs (RunSync callers must not hang).
  RunPosted();
}

}  // namespace leash::proxy
