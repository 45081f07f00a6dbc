// Test helper: opens connections to a Unix socket served by UnixGrpcServer and says how many the
// server kept. A kept connection gets gRPC's first frame (the server's SETTINGS); a refused one
// is closed unread. Prints "kept=K closed=C" once every connection has shown which it is, then
// holds them all for --hold-ms before exiting.
//   connection_holder <socket> <count> [--hold-ms=0]
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: connection_holder <socket> <count> [--hold-ms=N]\n");
    return 2;
  }
  const int count = std::atoi(argv[2]);
  int hold_ms = 0;
  if (argc > 3 && std::strncmp(argv[3], "--hold-ms=", 10) == 0) hold_ms = std::atoi(argv[3] + 10);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, argv[1], sizeof(address.sun_path) - 1);
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      std::fprintf(stderr, "connect %s: %s\n", argv[1], std::strerror(errno));
      return 1;
    }
    fds.push_back(fd);
  }
  int kept = 0;
  int closed = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) {
      std::fprintf(stderr, "a connection showed nothing within 5 s\n");
      return 1;
    }
    char byte;
    const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    (n > 0 ? kept : closed) += 1;
  }
  std::printf("kept=%d closed=%d\n", kept, closed);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  return 0;
}
