#include "controlplane/sidecar_api/stack_dump.h"

#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace leash::sidecar {
namespace {

// A real-time signal nothing else in Leash uses.
int DumpSignal() { return SIGRTMIN + 7; }

std::atomic<int> g_dump_fd{-1};
std::atomic<bool> g_done{false};

void WriteString(int fd, const char* text) {
  const ssize_t ignored = write(fd, text, std::strlen(text));
  (void)ignored;
}

void OnDumpSignal(int) {
  const int fd = g_dump_fd.load();
  if (fd >= 0) {
    char header[64];
    // snprintf is not on the async-signal-safe list, but with an integer and a stack buffer it
    // takes no lock and allocates nothing in glibc.
    std::snprintf(header, sizeof(header), "thread %ld:\n", static_cast<long>(syscall(SYS_gettid)));
    WriteString(fd, header);
    void* frames[64];
    const int depth = backtrace(frames, 64);
    backtrace_symbols_fd(frames, depth, fd);
  }
  g_done.store(true);
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

void DumpAllThreadStacks(int fd) {
  g_dump_fd.store(fd);
  const pid_t pid = getpid();
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    WriteString(fd, "stack dump: cannot list /proc/self/task\n");
    return;
  }
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    g_done.store(false);
    if (syscall(SYS_tgkill, pid, tid, DumpSignal()) != 0) continue;
    // Wait for the thread to write its stack, a bounded while.
    for (int i = 0; i < 100 && !g_done.load(); ++i) {
      timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
    }
    if (!g_done.load()) {
      char line[80];
      std::snprintf(line, sizeof(line), "thread %d: did not answer the dump signal\n", tid);
      WriteString(fd, line);
    }
  }
  closedir(tasks);
  g_dump_fd.store(-1);
}

}  // namespace leash::sidecar
