// The event loop: readiness reaches the right handler and tag, timers fire in deadline order
// and only while armed, other threads' work runs on the loop, and doomed objects outlive the
// batch that doomed them.
#include "proxy/event_loop.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "proxy/testing/loop_thread.h"

namespace leash::proxy {
namespace {

using testing::LoopThread;

struct Recorder : EventLoop::Handler {
  std::vector<unsigned> tags;
  absl::Notification seen;
  void OnEvents(uint32_t events, unsigned tag) override {
    if (!(events & EPOLLIN)) return;
    tags.push_back(tag);
    if (!seen.HasBeenNotified()) seen.Notify();
  }
};

TEST(EventLoop, ReadinessReachesHandlerWithItsTag) {
  LoopThread thread;
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
  Recorder recorder;
  thread.loop()->RunSync([&] { ASSERT_TRUE(thread.loop()->Add(fds[0], EPOLLIN, &recorder, 3).ok()); });
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  ASSERT_TRUE(recorder.seen.WaitForNotificationWithTimeout(absl::Seconds(5)));
  thread.loop()->RunSync([&] {
    EXPECT_EQ(recorder.tags.front(), 3u);
    thread.loop()->Remove(fds[0]);
  });
  close(fds[0]);
  close(fds[1]);
}

struct Timed : EventLoop::TimerTarget {
  Timed(std::vector<int>* o, int i) : order(o), id(i) {}
  std::vector<int>* order;
  int id;
  EventLoop::TimerHandle handle;
  void OnTimer() override { order->push_back(id); }
};

struct Last : EventLoop::TimerTarget {
  explicit Last(absl::Notification* d) : done(d) {}
  absl::Notification* done;
  EventLoop::TimerHandle handle;
  void OnTimer() override { done->Notify(); }
};

TEST(EventLoop, TimersFireInDeadlineOrderAndCancelledOnesDoNot) {
  LoopThread thread;
  std::vector<int> order;
  Timed a(&order, 1), b(&order, 2), c(&order, 3);
  absl::Notification done;
  Last last(&done);
  thread.loop()->RunSync([&] {
    EventLoop* loop = thread.loop();
    const absl::Time now = absl::Now();
    loop->ArmTimer(&b.handle, now + absl::Milliseconds(40), &b);
    loop->ArmTimer(&a.handle, now + absl::Milliseconds(20), &a);
    loop->ArmTimer(&c.handle, now + absl::Milliseconds(30), &c);
    loop->CancelTimer(&c.handle);
    loop->ArmTimer(&last.handle, now + absl::Milliseconds(80), &last);
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  thread.loop()->RunSync([&] { EXPECT_EQ(order, (std::vector<int>{1, 2})); });
}

TEST(EventLoop, PostAndRunSyncRunOnTheLoopThread) {
  LoopThread thread;
  std::atomic<bool> on_loop{false};
  thread.loop()->RunSync([&] { on_loop = thread.loop()->InLoopThread(); });
  EXPECT_TRUE(on_loop.load());
  EXPECT_FALSE(thread.loop()->InLoopThread());
  absl::Notification posted;
  thread.loop()->Post([&] { posted.Notify(); });
  EXPECT_TRUE(posted.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

struct Counted : EventLoop::Deletable {
  std::atomic<int>* deleted;
  explicit Counted(std::atomic<int>* d) : deleted(d) {}
  ~Counted() override { ++*deleted; }
};

TEST(EventLoop, DeleteSoonDeletesAfterTheBatch) {
  LoopThread thread;
  std::atomic<int> deleted{0};
  thread.loop()->RunSync([&] {
    thread.loop()->DeleteSoon(new Counted(&deleted));
    EXPECT_EQ(deleted.load(), 0);  // still alive within the batch
  });
  thread.loop()->RunSync([] {});  // one more batch
  EXPECT_EQ(deleted.load(), 1);
}

}  // namespace
}  // namespace leash::proxy
