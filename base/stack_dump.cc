#include "base/stack_dump.h"

#include <dirent.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace leash::base {
namespace {

// A real-time signal nothing else in Leash uses.
int DumpSignal() { return SIGRTMIN + 7; }

std::atomic<int> g_dump_fd{-1};
std::atomic<int> g_dumped{0};

// Async-signal context: write(2), backtrace (already loaded) and plain arithmetic only.
void WriteBacktrace(int fd) {
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, fd);
}

void OnDumpSignal(int) {
  const int saved = errno;
  const int fd = g_dump_fd.load();
  if (fd >= 0) WriteBacktrace(fd);
  g_dumped.fetch_add(1);
  errno = saved;
}

// "thread <tid> (<comm>):" for one thread.
void WriteHeader(int fd, int tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
  char comm[32] = "?";
  const int comm_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (comm_fd >= 0) {
    const ssize_t n = read(comm_fd, comm, sizeof(comm) - 1);
    comm[n > 0 ? n - (comm[n - 1] == '\n') : 0] = '\0';
    close(comm_fd);
  }
  dprintf(fd, "thread %d (%s):\n", tid, comm);
}

}  // namespace

void InstallStackDumpHandler() {
  void* frames[2];
  backtrace(frames, 2);  // loads libgcc_s now, not inside a signal handler later
  struct sigaction action {};
  action.sa_handler = OnDumpSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(DumpSignal(), &action, nullptr);
}

void DumpAllThreadStacks(int fd, absl::Duration per_thread) {
  g_dump_fd.store(fd);
  const pid_t pid = getpid();
  const int self = static_cast<int>(syscall(SYS_gettid));
  const int64_t waits = std::max<int64_t>(1, absl::ToInt64Milliseconds(per_thread));
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    dprintf(fd, "stack dump: cannot list /proc/self/task: %s\n", std::strerror(errno));
  } else {
    while (const dirent* entry = readdir(tasks)) {
      const int tid = std::atoi(entry->d_name);
      if (tid <= 0 || tid == self) continue;
      WriteHeader(fd, tid);
      const int before = g_dumped.load();
      if (syscall(SYS_tgkill, pid, tid, DumpSignal()) != 0) continue;
      for (int64_t i = 0; i < waits && g_dumped.load() == before; ++i) {
        timespec pause{0, 1000000};
        nanosleep(&pause, nullptr);
      }
      if (g_dumped.load() == before) {
        dprintf(fd, "  (did not answer the dump signal within %lld ms)\n",
                static_cast<long long>(waits));
      }
    }
    closedir(tasks);
  }
  WriteHeader(fd, self);
  WriteBacktrace(fd);
  g_dump_fd.store(-1);
}

}  // namespace leash::base
