// A tiny program the fswatch root tests run as test accounts: one operation, and the errno it
// met, printed exactly ("ok" or "errno=<n>"). It lives on an unmarked filesystem, so running it
// raises no event of its own; only what it touches on the test's tmpfs is judged.
//
//   probe open PATH                  open O_RDONLY, close
//   probe list DIR                   opendir, read every name, closedir
//   probe open-nonblock PATH         open O_RDONLY|O_NONBLOCK (a FIFO: no writer needed), close
//   probe open-write PATH            open O_WRONLY (a FIFO: waits for a reader)
//   probe exec PATH [ARGS...]        execv; prints only on failure
//   probe memfd-exec PATH [ARGS...]  copy PATH into a memfd and fexecve it; prints only on
//                                    failure
//   probe wait-open DIR FIFO NAME    chdir DIR, wait for a line on FIFO, then open NAME
//   probe storm PATH COUNT           COUNT x open+close; prints "ok <count> <failures>"
//   probe storm-for PATH MS          open+close for MS milliseconds; prints
//                                    "ok <count> <failures> <successes>"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace {

int Report(int fd) {
  if (fd < 0) {
    printf("errno=%d\n", errno);
    return 1;
  }
  close(fd);
  printf("ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: probe open|open-write|exec|wait-open|storm|storm-for ...\n");
    return 2;
  }
  const char* op = argv[1];
  if (strcmp(op, "open") == 0) return Report(open(argv[2], O_RDONLY | O_CLOEXEC));
  if (strcmp(op, "list") == 0) {
    DIR* dir = opendir(argv[2]);
    if (dir == nullptr) {
      printf("errno=%d\n", errno);
      return 1;
    }
    while (readdir(dir) != nullptr) {
    }
    closedir(dir);
    printf("ok\n");
    return 0;
  }
  if (strcmp(op, "open-nonblock") == 0) {
    return Report(open(argv[2], O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  }
  if (strcmp(op, "open-write") == 0) return Report(open(argv[2], O_WRONLY | O_CLOEXEC));
  if (strcmp(op, "exec") == 0) {
    execv(argv[2], argv + 2);
    printf("errno=%d\n", errno);
    return 1;
  }
  if (strcmp(op, "memfd-exec") == 0) {
    const int in = open(argv[2], O_RDONLY | O_CLOEXEC);
    const int mem = memfd_create("probe", MFD_CLOEXEC);
    if (in < 0 || mem < 0) {
      printf("errno=%d\n", errno);
      return 1;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
      if (write(mem, buf, n) != n) {
        printf("errno=%d\n", errno);
        return 1;
      }
    }
    fexecve(mem, argv + 2, environ);
    printf("errno=%d\n", errno);
    return 1;
  }
  if (strcmp(op, "wait-open") == 0 && argc == 5) {
    if (chdir(argv[2]) != 0) {
      printf("chdir errno=%d\n", errno);
      return 1;
    }
    FILE* go = fopen(argv[3], "r");
    if (go == nullptr) {
      printf("fifo errno=%d\n", errno);
      return 1;
    }
    char line[16];
    if (fgets(line, sizeof(line), go) == nullptr) return 1;
    fclose(go);
    return Report(open(argv[4], O_RDONLY | O_CLOEXEC));
  }
  if (strcmp(op, "storm") == 0 && argc >= 4) {  // more arguments: ignored (a test's marker)
    const long count = atol(argv[3]);
    long failures = 0;
    for (long i = 0; i < count; ++i) {
      const int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        ++failures;
      } else {
        close(fd);
      }
    }
    printf("ok %ld %ld\n", count, failures);
    return 0;
  }
  if (strcmp(op, "storm-for") == 0 && argc == 4) {
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    const long ms = atol(argv[3]);
    long count = 0, failures = 0;
    for (;;) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= ms) break;
      const int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
      ++count;
      if (fd < 0) {
        ++failures;
      } else {
        close(fd);
      }
    }
    printf("ok %ld %ld %ld\n", count, failures, count - failures);
    return 0;
  }
  fprintf(stderr, "probe: bad arguments\n");
  return 2;
}
