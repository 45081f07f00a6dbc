#include "base/stack_dump.h"

#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

// A function whose name must show up in the waiting thread's stack (external linkage, so
// -rdynamic exports its symbol to backtrace_symbols_fd).
__attribute__((noinline)) void LeashParkedForDump(std::atomic<bool>* parked,
                                                  std::atomic<bool>* stop) {
  parked->store(true);
  while (!stop->load()) usleep(1000);
}

namespace leash::base {
namespace {

TEST(StackDump, WritesEveryThreadsStack) {
  InstallStackDumpHandler();
  std::atomic<bool> parked{false};
  std::atomic<bool> stop{false};
  std::thread parker([&] { LeashParkedForDump(&parked, &stop); });
  // Dump only once the thread is inside the function: a thread that has not started running
  // yet shows only start_thread and clone3 (seen with -c opt).
  while (!parked.load()) usleep(100);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  DumpAllThreadStacks(fds[1]);
  close(fds[1]);
  stop.store(true);
  parker.join();
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  close(fds[0]);
  // Two threads (this one and the parked one), each with a header and frames.
  EXPECT_GE(std::count(out.begin(), out.end(), ':'), 2);
  EXPECT_THAT(out, ::testing::HasSubstr("LeashParkedForDump"));
  EXPECT_THAT(out, ::testing::HasSubstr("DumpAllThreadStacks"));
}

}  // namespace
}  // namespace leash::base
