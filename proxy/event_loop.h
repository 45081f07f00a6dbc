// One epoll event loop: the thread every connection of leash-proxy lives on. Many connections
// share it (no thread per connection); per connection it holds only an epoll registration and,
// while a deadline is armed, one timer entry. Other threads (the policy subscriber, resolver
// workers) hand it work with Post/RunSync.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leash::proxy {

class EventLoop {
 public:
  // Receives readiness for the descriptors it registered. `tag` (0..3) is the value given at
  // registration, so one object can tell its descriptors apart.
  class Handler {
   public:
    virtual void OnEvents(uint32_t events, unsigned tag) = 0;

   protected:
    ~Handler() = default;
  };

  class TimerTarget {
   public:
    virtual void OnTimer() = 0;

   protected:
    ~TimerTarget() = default;
  };

  // Where an armed timer sits; owned by the object the timer is for.
  class TimerHandle {
   private:
    friend class EventLoop;
    std::multimap<absl::Time, TimerHandle*>::iterator it_;
    TimerTarget* target_ = nullptr;
    bool armed_ = false;
  };

  // Objects handed to DeleteSoon: deleted after the current batch of events, so an event
  // already fetched for them finds them still alive (and closed).
  class Deletable {
   public:
    virtual ~Deletable() = default;
  };

  static absl::StatusOr<std::unique_ptr<EventLoop>> Create();
  ~EventLoop();

  // Loop thread only (or before Run). `events`: EPOLLIN | EPOLLOUT | EPOLLET | ...
  absl::Status Add(int fd, uint32_t events, Handler* handler, unsigned tag = 0);
  absl::Status Modify(int fd, uint32_t events, Handler* handler, unsigned tag = 0);
  void Remove(int fd);

  // Loop thread only. Arming an armed handle moves it; a fired timer is disarmed before its
  // target runs.
  void ArmTimer(TimerHandle* handle, absl::Time deadline, TimerTarget* target);
  void CancelTimer(TimerHandle* handle);

  // Loop thread only.
  void DeleteSoon(Deletable* object);

  // Any thread: runs `task` on the loop thread soon.
  void Post(std::function<void()> task);
  // Any thread: runs `task` on the loop thread and returns when it has run (inline when called
  // on the loop thread). The loop must be running, or start soon.
  void RunSync(const std::function<void()>& task);

  // Runs until Stop(); the calling thread becomes the loop thread.
  void Run();
  // Any thread.
  void Stop();

  bool InLoopThread() const { return std::this_thread::get_id() == loop_thread_; }
  // The time at the start of the current batch of events (cheap; loop thread).
  absl::Time now() const { return now_; }

 private:
  EventLoop(int epoll_fd, int wake_fd) : epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}
  absl::Status Control(int op, int fd, uint32_t events, Handler* handler, unsigned tag);
  void RunPosted();
  void FireTimers();

  const int epoll_fd_;
  const int wake_fd_;
  std::thread::id loop_thread_;
  absl::Time now_ = absl::Now();
  std::multimap<absl::Time, TimerHandle*> timers_;
  std::vector<Deletable*> doomed_;
  bool stop_requested_ = false;  // loop thread copy

  absl::Mutex mu_;
  std::vector<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace leash::proxy
