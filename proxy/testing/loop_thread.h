// An EventLoop running on its own thread for the length of a test.
#pragma once

#include <memory>
#include <thread>

#include "proxy/event_loop.h"

namespace leash::proxy::testing {

class LoopThread {
 public:
  LoopThread() : loop_(EventLoop::Create().value()), thread_([this] { loop_->Run(); }) {}
  ~LoopThread() {
    loop_->Stop();
    thread_.join();
  }
  EventLoop* loop() { return loop_.get(); }

 private:
  std::unique_ptr<EventLoop> loop_;
  std::thread thread_;
};

}  // namespace leash::proxy::testing
