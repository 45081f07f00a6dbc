// A tiny client run *as a test account* (setpriv) inside a test namespace, so the kernel sees
// that account's UID on the socket: `lnft_probe tcp|udp ADDRESS PORT`. Prints what the server
// answered, or `error <ERRNO>` / `timeout`, on one line. Exit 0 whenever it printed an outcome.
// Also: `icmp ADDRESS 0` (an echo through an unprivileged ping socket: "echo reply"),
// `udplite ADDRESS PORT` ("sent" once the datagram left), `serve ADDRESS PORT [REPLY]` (a
// listener owned by the account: prints "listening", then answers every connection with REPLY,
// "squatter" by default, for 20 s, and closes it), `serve-hold ADDRESS PORT REPLY` (the same,
// but every connection stays open until the 20 s are up), and `serve-udp ADDRESS PORT REPLY` (the same for datagrams:
// answers each with REPLY). A TCP connection that is made but never answered prints "silent",
// one answered but not closed "<answer> (still open)", one never made "timeout".
// ADDRESS may be 0.0.0.0 or :: for the servers.
// A compiled binary because the test accounts cannot read the build tree or pyenv's python.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kTimeoutMs = 3000;

int Outcome(const char* what) {
  std::printf("%s\n", what);
  return 0;
}

int Error(int error) {
  const char* name = strerrorname_np(error);
  std::printf("error %s\n", name == nullptr ? "?" : name);
  return 0;
}

int Icmp(const sockaddr_storage& address, socklen_t length) {
  const bool v4 = address.ss_family == AF_INET;
  const int fd = socket(address.ss_family, SOCK_DGRAM | SOCK_NONBLOCK,
                        v4 ? static_cast<int>(IPPROTO_ICMP) : static_cast<int>(IPPROTO_ICMPV6));
  if (fd < 0) return Error(errno);  // EACCES: ping_group_range leaves this group out
  unsigned char echo[16] = {};
  echo[0] = v4 ? ICMP_ECHO : ICMP6_ECHO_REQUEST;  // the kernel fills the id and checksum
  if (sendto(fd, echo, sizeof(echo), 0, reinterpret_cast<const sockaddr*>(&address), length) < 0) {
    return Error(errno);  // a drop in the output hook surfaces here as EPERM
  }
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, kTimeoutMs) <= 0) return Outcome("timeout");
  unsigned char reply[64];
  const ssize_t n = recv(fd, reply, sizeof(reply), 0);
  if (n < 0) return Error(errno);
  const int echo_reply = v4 ? ICMP_ECHOREPLY : ICMP6_ECHO_REPLY;
  return Outcome(n > 0 && reply[0] == echo_reply ? "echo reply"
                                                                                : "other reply");
}

int UdpLite(const sockaddr_storage& address, socklen_t length) {
  const int fd = socket(address.ss_family, SOCK_DGRAM, IPPROTO_UDPLITE);
  if (fd < 0) return Error(errno);
  if (sendto(fd, "ping", 4, 0, reinterpret_cast<const sockaddr*>(&address), length) < 0) {
    return Error(errno);
  }
  return Outcome("sent");
}

int ServeUdp(const sockaddr_storage& address, socklen_t length, const char* reply) {
  const int fd = socket(address.ss_family, SOCK_DGRAM, 0);
  if (fd < 0) return Error(errno);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) return Error(errno);
  std::printf("listening\n");
  std::fflush(stdout);
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 100) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buffer[512];
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof(peer);
    if (recvfrom(fd, buffer, sizeof(buffer), 0, reinterpret_cast<sockaddr*>(&peer),
                 &peer_length) < 0) {
      continue;
    }
    // A drop in the output hook surfaces here as EPERM: said on stdout, for the test's log.
    if (sendto(fd, reply, std::strlen(reply), 0, reinterpret_cast<sockaddr*>(&peer),
               peer_length) < 0) {
      std::printf("reply error %s\n", strerrorname_np(errno));
    } else {
      std::printf("replied\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

int Serve(const sockaddr_storage& address, socklen_t length, const char* reply, bool hold) {
  const int fd = socket(address.ss_family, SOCK_STREAM, 0);
  if (fd < 0) return Error(errno);
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0 || listen(fd, 16) != 0) {
    return Error(errno);
  }
  std::printf("listening\n");
  std::fflush(stdout);
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 100) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const int client = accept(fd, nullptr, nullptr);
    if (client < 0) continue;
    const std::string line = std::string(reply) + "\n";
    if (write(client, line.data(), line.size()) < 0) std::perror("write");
    // Held: the process keeps the socket (and so its UID on every packet) until it exits.
    if (!hold) close(client);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool serving = argc > 1 && std::strncmp(argv[1], "serve", 5) == 0;
  if (argc != 4 && !(serving && argc == 5)) {
    std::fprintf(stderr,
                 "usage: %s tcp|udp|icmp|udplite ADDRESS PORT | serve ADDRESS PORT [REPLY] | "
                 "serve-udp ADDRESS PORT REPLY\n",
                 argv[0]);
    return 2;
  }
  const char* reply_text = argc == 5 ? argv[4] : "squatter";
  const bool udp = std::strcmp(argv[1], "udp") == 0;
  sockaddr_storage address{};
  socklen_t length = 0;
  const int port = std::atoi(argv[3]);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, argv[2], &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof(*v4);
  } else if (inet_pton(AF_INET6, argv[2], &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof(*v6);
  } else {
    std::fprintf(stderr, "not an address: %s\n", argv[2]);
    return 2;
  }
  if (std::strcmp(argv[1], "icmp") == 0) return Icmp(address, length);
  if (std::strcmp(argv[1], "udplite") == 0) return UdpLite(address, length);
  if (std::strcmp(argv[1], "serve") == 0) return Serve(address, length, reply_text, false);
  if (std::strcmp(argv[1], "serve-hold") == 0) return Serve(address, length, reply_text, true);
  if (std::strcmp(argv[1], "serve-udp") == 0) return ServeUdp(address, length, reply_text);
  const int fd = socket(address.ss_family, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK, 0);
  if (fd < 0) return Error(errno);
  char reply[512];
  if (udp) {
    if (sendto(fd, "ping", 4, 0, reinterpret_cast<sockaddr*>(&address), length) < 0) {
      return Error(errno);  // a drop in the output hook surfaces here as EPERM
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kTimeoutMs) <= 0) return Outcome("timeout");
    const ssize_t n = recv(fd, reply, sizeof(reply) - 1, 0);
    if (n < 0) return Error(errno);
    reply[n] = '\0';
    return Outcome(reply);
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), length) < 0 && errno != EINPROGRESS) {
    return Error(errno);
  }
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, kTimeoutMs) <= 0) return Outcome("timeout");
  int error = 0;
  socklen_t error_length = sizeof(error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length);
  if (error != 0) return Error(error);
  std::string text;
  while (true) {
    pollfd r{fd, POLLIN, 0};
    if (poll(&r, 1, kTimeoutMs) <= 0) {
      if (text.empty()) return Outcome("silent");
      while (!text.empty() && text.back() == '\n') text.pop_back();
      return Outcome((text + " (still open)").c_str());
    }
    const ssize_t n = read(fd, reply, sizeof(reply));
    if (n < 0) return Error(errno);
    if (n == 0) break;
    text.append(reply, n);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return Outcome(text.c_str());
}
