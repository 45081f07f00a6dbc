// The watcher's watchdog: "if the loop stops for 10 seconds it dumps every stack to the journal
// and exits." The group is leashd's, so exiting does not release it: leashd hands it to its
// standby watcher, which answers what this one left under each subject's fail_mode (a group of
// the watcher's own, in tests, is closed, and that answers every pending event allow).
//
// Built so that firing cannot itself wedge on the stalled loop: everything it uses is loaded
// before the marks go on (Prepare() makes the first backtrace(), which loads libgcc_s), the
// stacks are symbolized from the loaded images only (backtrace_symbols_fd: no file is read),
// each thread gets a bounded time to dump, and alarm() ends the process even if stderr blocks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include <sys/types.h>

#include "absl/status/status.h"

namespace leash::fswatch {

class Watchdog {
 public:
  // Installs the stack-dump signal handler and loads what dumping needs. Call before the
  // marks go on and before any other thread starts.
  static absl::Status Prepare();

  // Starts the watchdog thread: it compares CLOCK_MONOTONIC with `last_pass_ns()` and fires
  // when the loop has made no pass for `limit_seconds`. Once a second it also interrupts the
  // loop thread `loop_tid` with a no-op signal, so a loop parked in a blocking read of an idle
  // group makes a pass; a loop stuck anywhere a signal cannot reach (a killable kernel wait)
  // makes none, and that is what the watchdog is for.
  Watchdog(std::function<int64_t()> last_pass_ns, pid_t loop_tid, int limit_seconds,
           int exit_code);
  ~Watchdog();

  // The no-op signal that ends the loop's blocking read.
  static int KickSignal();

  // Dumps every thread's stack to stderr and _exit()s with `exit_code`. Never returns.
  [[noreturn]] static void Fire(const char* why, int exit_code);

 private:
  void Run();

  std::function<int64_t()> last_pass_ns_;
  const pid_t loop_tid_;
  const int limit_seconds_;
  const int exit_code_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace leash::fswatch
