#include "fswatch/watchdog.h"

#include <dirent.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace leash::fswatch {
namespace {

std::atomic<int> g_dumped{0};

int DumpSignal() { return SIGRTMIN + 4; }
void KickHandler(int) {}  // only to end a blocking read with EINTR

// Async-signal context: only write(2), backtrace (already loaded) and plain arithmetic.
void DumpHandler(int) {
  const int saved = errno;
  char header[64];
  const int tid = static_cast<int>(syscall(SYS_gettid));
  const int n = snprintf(header, sizeof(header), "--- thread %d ---\n", tid);
  if (n > 0) (void)!write(2, header, static_cast<size_t>(n));
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, 2);
  g_dumped.fetch_add(1);
  errno = saved;
}

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
  // The first backtrace() loads libgcc_s: do it now, while an open cannot wait on the loop.
  void* frames[4];
  backtrace(frames, 4);
  struct sigaction action {};
  action.sa_handler = DumpHandler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(DumpSignal(), &action, nullptr) != 0) {
    return absl::ErrnoToStatus(errno, "sigaction for the watchdog's stack-dump signal");
  }
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
          "leash-fswatch: watchdog: %s; dumping every thread's stack and exiting (closing the "
          "fanotify group answers every pending event allow, releasing the host)\n",
          why);
  const int self = static_cast<int>(syscall(SYS_gettid));
  DIR* dir = opendir("/proc/self/task");  // procfs is never marked
  if (dir != nullptr) {
    while (const dirent* entry = readdir(dir)) {
      const int tid = atoi(entry->d_name);
      if (tid <= 0 || tid == self) continue;
      char comm_path[64];
      snprintf(comm_path, sizeof(comm_path), "/proc/self/task/%d/comm", tid);
      char comm[32] = "?";
      const int fd = open(comm_path, O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        const ssize_t n = read(fd, comm, sizeof(comm) - 1);
        comm[n > 0 ? n : 0] = '\0';
        close(fd);
      }
      dprintf(2, "thread %d: %s", tid, comm);
      const int before = g_dumped.load();
      if (syscall(SYS_tgkill, getpid(), tid, DumpSignal()) != 0) continue;
      // A thread parked in a killable kernel wait (an open held for this very group) never
      // runs its handler; it gets half a second.
      for (int i = 0; i < 50 && g_dumped.load() == before; ++i) SleepMs(10);
      if (g_dumped.load() == before) dprintf(2, "  (did not dump within 500 ms)\n");
    }
    closedir(dir);
  }
  dprintf(2, "--- watchdog thread %d ---\n", self);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
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
