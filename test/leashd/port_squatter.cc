// What an agent with a C compiler tries against the proxy's ports, run as a test account by
// proxy_ports_test (a compiled binary: test accounts cannot read pyenv's python).
//
//   port_squatter loop FIRST LAST
//       Until SIGTERM: binds every port FIRST..LAST on 127.0.0.1, 127.0.0.2, 0.0.0.0, ::1, ::
//       (dual stack), :: (IPv6 only) and ::ffff:127.0.0.1, each with SO_REUSEADDR and
//       SO_REUSEPORT, as fast as it can. A bind that succeeds is closed at once and printed as
//       "won <address> <port> <CLOCK_MONOTONIC ns>". Prints "started" first and
//       "attempts=<n> won=<n> rounds=<n>" when stopped; after SIGUSR1, "round done" once the
//       next whole round (begun after the signal) is over.
//   port_squatter hold ADDRESS PORT
//       Binds and listens there (SO_REUSEADDR): "listening", or "error <ERRNO>"; answers each
//       connection with "squatter" until SIGTERM, then prints "served=<n>".
//   port_squatter holdall FIRST LAST
//       Binds every port FIRST..LAST on 127.0.0.1, TCP (listening) and UDP, and keeps them:
//       "holding tcp=<n> udp=<n>" once done; at SIGTERM closes them all and prints
//       "served=<connections queued on them>".
//   port_squatter udpecho ADDRESS PORT
//       A UDP server: "listening", answers each datagram with "echo" until SIGTERM, then prints
//       "served=<n>".
//   port_squatter udpsend ADDRESS PORT
//       Sends one datagram there: "answered", "silent" (nothing within 2 s), or "error <ERRNO>".
//   port_squatter connect ADDRESS PORT
//       Connects and sends an HTTP request for blocked.example; prints "refused" (the
//       connection was reset before it was established: no listener took it), or "judged"
//       (a listener took it and answered, reset or closed it), or "error <ERRNO>".
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t stop = 0;
void OnTerm(int) { stop = 1; }
// SIGUSR1 asks `loop` to say when the next whole round (begun after the signal) is done.
volatile sig_atomic_t round_asked = 0;
void OnUsr1(int) { round_asked = 1; }

struct Target {
  const char* address;
  int family;
  bool v6only;
};

constexpr Target kTargets[] = {
    {"127.0.0.1", AF_INET, false}, {"127.0.0.2", AF_INET, false}, {"0.0.0.0", AF_INET, false},
    {"::1", AF_INET6, true},       {"::", AF_INET6, false},
    {"::", AF_INET6, true},        {"::ffff:127.0.0.1", AF_INET6, false},
};

socklen_t Fill(const char* address, int family, uint16_t port, sockaddr_storage* storage) {
  std::memset(storage, 0, sizeof(*storage));
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    inet_pton(AF_INET, address, &in->sin_addr);
    return sizeof(*in);
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(storage);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  inet_pton(AF_INET6, address, &in6->sin6_addr);
  return sizeof(*in6);
}

int NewSocket(const Target& target) {
  const int fd = socket(target.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (target.family == AF_INET6) {
    const int v6only = target.v6only ? 1 : 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  return fd;
}

int64_t MonotonicNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

const char* ErrnoName(int error) {
  const char* name = strerrorname_np(error);
  return name == nullptr ? "?" : name;
}

int Loop(uint16_t first, uint16_t last) {
  constexpr size_t kCount = sizeof(kTargets) / sizeof(kTargets[0]);
  int fds[kCount];
  for (size_t i = 0; i < kCount; ++i) fds[i] = NewSocket(kTargets[i]);
  std::printf("started\n");
  std::fflush(stdout);
  uint64_t attempts = 0, won = 0, rounds = 0;
  while (!stop) {
    const bool report = round_asked != 0;
    round_asked = 0;
    for (uint32_t port = first; port <= last && !stop; ++port) {
      for (size_t i = 0; i < kCount; ++i) {
        if (fds[i] < 0) fds[i] = NewSocket(kTargets[i]);
        if (fds[i] < 0) continue;
        sockaddr_storage storage;
        const socklen_t length =
            Fill(kTargets[i].address, kTargets[i].family, static_cast<uint16_t>(port), &storage);
        ++attempts;
        if (bind(fds[i], reinterpret_cast<sockaddr*>(&storage), length) == 0) {
          ++won;
          std::printf("won %s %u %lld\n", kTargets[i].address, port,
                      static_cast<long long>(MonotonicNs()));
          std::fflush(stdout);
          close(fds[i]);  // a failed bind leaves the socket reusable; a bound one is spent
          fds[i] = -1;
        }
      }
    }
    ++rounds;
    if (report && !stop) {
      std::printf("round done\n");
      std::fflush(stdout);
    }
  }
  std::printf("attempts=%llu won=%llu rounds=%llu\n", static_cast<unsigned long long>(attempts),
              static_cast<unsigned long long>(won), static_cast<unsigned long long>(rounds));
  return 0;
}

int Hold(const char* address, uint16_t port) {
  const int family = std::strchr(address, ':') != nullptr ? AF_INET6 : AF_INET;
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage storage;
  const socklen_t length = Fill(address, family, port, &storage);
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || listen(fd, 64) != 0) {
    std::printf("error %s\n", ErrnoName(errno));
    return 0;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  int served = 0;
  while (!stop) {
    pollfd wait{fd, POLLIN, 0};
    if (poll(&wait, 1, 100) <= 0) continue;
    const int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++served;
    if (write(client, "squatter\n", 9) < 0) std::perror("write");
    close(client);
  }
  std::printf("served=%d\n", served);
  return 0;
}

int HoldAll(uint16_t first, uint16_t last) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  std::vector<int> listeners, datagrams;
  for (uint32_t port = first; port <= last; ++port) {
    sockaddr_storage storage;
    const socklen_t length = Fill("127.0.0.1", AF_INET, static_cast<uint16_t>(port), &storage);
    const int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const int one = 1;
    setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(tcp, reinterpret_cast<sockaddr*>(&storage), length) == 0 && listen(tcp, 16) == 0) {
      listeners.push_back(tcp);
    } else {
      close(tcp);
    }
    const int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (bind(udp, reinterpret_cast<sockaddr*>(&storage), length) == 0) {
      datagrams.push_back(udp);
    } else {
      close(udp);
    }
  }
  std::printf("holding tcp=%zu udp=%zu\n", listeners.size(), datagrams.size());
  std::fflush(stdout);
  while (!stop) pause();
  int served = 0;
  for (int fd : listeners) {
    while (true) {
      const int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) break;
      ++served;
      close(client);
    }
    close(fd);
  }
  for (int fd : datagrams) close(fd);
  std::printf("served=%d\n", served);
  return 0;
}

int UdpEcho(const char* address, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage storage;
  const socklen_t length = Fill(address, AF_INET, port, &storage);
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    std::printf("error %s\n", ErrnoName(errno));
    return 0;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  int served = 0;
  while (!stop) {
    pollfd wait{fd, POLLIN, 0};
    if (poll(&wait, 1, 100) <= 0) continue;
    char buffer[512];
    sockaddr_storage peer;
    socklen_t peer_length = sizeof(peer);
    if (recvfrom(fd, buffer, sizeof(buffer), 0, reinterpret_cast<sockaddr*>(&peer),
                 &peer_length) < 0) {
      continue;
    }
    ++served;
    (void)sendto(fd, "echo", 4, 0, reinterpret_cast<sockaddr*>(&peer), peer_length);
  }
  std::printf("served=%d\n", served);
  return 0;
}

int UdpSend(const char* address, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_storage storage;
  const socklen_t length = Fill(address, AF_INET, port, &storage);
  if (sendto(fd, "ping", 4, 0, reinterpret_cast<sockaddr*>(&storage), length) < 0) {
    std::printf("error %s\n", ErrnoName(errno));
    return 0;
  }
  char reply[16];
  std::printf(recv(fd, reply, sizeof(reply), 0) > 0 ? "answered\n" : "silent\n");
  return 0;
}

int Connect(const char* address, uint16_t port) {
  const int family = std::strchr(address, ':') != nullptr ? AF_INET6 : AF_INET;
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_storage storage;
  const socklen_t length = Fill(address, family, port, &storage);
  if (connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    if (errno == ECONNREFUSED) {
      std::printf("refused\n");
    } else {
      std::printf("error %s\n", ErrnoName(errno));
    }
    return 0;
  }
  const char request[] = "GET / HTTP/1.1\r\nHost: blocked.example\r\n\r\n";
  (void)send(fd, request, sizeof(request) - 1, MSG_NOSIGNAL);
  char reply[64] = {};
  const ssize_t n = recv(fd, reply, sizeof(reply) - 1, 0);
  if (n > 0 && std::strncmp(reply, "squatter", 8) == 0) {
    std::printf("squatter\n");
  } else {
    std::printf("judged\n");
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction action {};
  action.sa_handler = OnTerm;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  struct sigaction usr1 {};
  usr1.sa_handler = OnUsr1;
  sigaction(SIGUSR1, &usr1, nullptr);
  if (argc == 4) {
    const std::string mode = argv[1];
    const long a = std::strtol(argv[2], nullptr, 10);
    const long b = std::strtol(argv[3], nullptr, 10);
    if (mode == "loop") return Loop(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    if (mode == "hold") return Hold(argv[2], static_cast<uint16_t>(b));
    if (mode == "connect") return Connect(argv[2], static_cast<uint16_t>(b));
    if (mode == "holdall") return HoldAll(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    if (mode == "udpecho") return UdpEcho(argv[2], static_cast<uint16_t>(b));
    if (mode == "udpsend") return UdpSend(argv[2], static_cast<uint16_t>(b));
  }
  std::fprintf(stderr,
               "usage: port_squatter loop FIRST LAST | hold ADDRESS PORT | holdall FIRST LAST | "
               "udpecho ADDRESS PORT | udpsend ADDRESS PORT | connect ADDRESS PORT\n");
  return 2;
}
