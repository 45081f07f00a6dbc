#include "fswatch/watchdog.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/stack_dump.h"

namespace leash::fswatch {
namespace {

void KickHandler(int) {}  // only to end a blocking read with EINTR

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

int Watchdog::KickSignal() { return SIGRTMIN + 5; }

absl::Status Watchdog::Prepare() {
  // Loads what a stack dump needs (libgcc_s) now, while an open cannot wait on the loop.
  base::InstallStackDumpHandler();
  struct sigaction kick {};
  kick.sa_handler = KickHandler;
  kick.sa_flags = 0;  // no SA_RESTART: the read must return
  sigemptyset(&kick.sa_mask);
  if (sigaction(KickSignal(), &kick, nullptr) != 0) {
    return absl::ErrnoToStatus(errno, "sigaction for the loop's wake-up signal");
  }
  return absl::OkStatus();
}

void Watchdog::Fire(const char* why, int exit_code) {
  // Whatever happens below (a blocked stderr, a thread that never runs its handler), the
  // process is gone within 5 s: SIGALRM's default action ends it.
  alarm(5);
  dprintf(2,
          "leash-fswatch: watchdog: %s; dumping every thread's stack and exiting (leashd hands "
          "the group to its standby watcher; a group of our own is closed, which answers every "
          "pending event allow)\n",
          why);
  // A thread parked in a killable kernel wait (an open held for this very group) never runs
  // its handler; it gets half a second.
  base::DumpAllThreadStacks(STDERR_FILENO, absl::Milliseconds(500));
  _exit(exit_code);
}

Watchdog::Watchdog(std::function<int64_t()> last_pass_ns, pid_t loop_tid, int limit_seconds,
                   int exit_code)
    : last_pass_ns_(std::move(last_pass_ns)), loop_tid_(loop_tid), limit_seconds_(limit_seconds),
      exit_code_(exit_code) {
  thread_ = std::thread([this] { Run(); });
}

Watchdog::~Watchdog() {
  stop_.store(true);
  thread_.join();
}

void Watchdog::Run() {
  pthread_setname_np(pthread_self(), "fsw-watchdog");
  const int64_t limit_ns = static_cast<int64_t>(limit_seconds_) * 1000000000;
  int ticks = 0;
  while (!stop_.load()) {
    SleepMs(250);
    if (++ticks % 4 == 0 && loop_tid_ > 0) syscall(SYS_tgkill, getpid(), loop_tid_, KickSignal());
    const int64_t idle = MonotonicNs() - last_pass_ns_();
    if (idle > limit_ns) {
      char why[96];
      snprintf(why, sizeof(why), "the event loop made no pass for %lld s",
               static_cast<long long>(idle / 1000000000));
      Fire(why, exit_code_);
    }
  }
}

}  // namespace leash::fswatch
