// Load for the proxy benchmark, run inside the namespace (clients as test accounts, so the
// kernel redirects them):
//   server <ip:port>                 epoll server: a connection whose first bytes are "BULK"
//                                    is drained to EOF and answered "OK <bytes>\n"; any other
//                                    is answered one byte as soon as it sends anything.
//   bulk <ip:port> <seconds>         sends for <seconds>, prints "bytes=N seconds=S"
//   latency <ip:port> <count> <host> <count> sequential connect -> HTTP request with Host
//                                    <host> -> first byte; prints "us=<each sample>"
//   hold <ip:port> <count> <host> <seconds>
//                                    opens <count> connections, each answered once, prints
//                                    "held N" and keeps them open <seconds>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in Parse(const std::string& text) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  const size_t colon = text.rfind(':');
  inet_pton(AF_INET, text.substr(0, colon).c_str(), &address.sin_addr);
  address.sin_port = htons(static_cast<uint16_t>(std::stoi(text.substr(colon + 1))));
  return address;
}

int Connect(const sockaddr_in& address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

struct Conn {
  bool bulk = false;
  bool decided = false;
  uint64_t bytes = 0;
};

int Server(const sockaddr_in& address) {
  const int one = 1;
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listen_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listen_fd, 16384) != 0) {
    std::perror("server listen");
    return 1;
  }
  const int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd;
  epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev);
  std::unordered_map<int, Conn> conns;
  std::vector<char> buffer(1 << 18);
  epoll_event events[512];
  while (true) {
    const int n = epoll_wait(ep, events, 512, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd) {
        while (true) {
          const int c = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0) break;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          conns[c] = Conn{};
          epoll_event cev{};
          cev.events = EPOLLIN | EPOLLET;
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
        continue;
      }
      Conn& conn = conns[fd];
      bool closed = false;
      while (true) {
        const ssize_t got = read(fd, buffer.data(), buffer.size());
        if (got > 0) {
          if (!conn.decided) {
            conn.decided = true;
            conn.bulk = got >= 4 && std::memcmp(buffer.data(), "BULK", 4) == 0;
            if (!conn.bulk) send(fd, "x", 1, MSG_NOSIGNAL);
          }
          conn.bytes += got;
          continue;
        }
        if (got == 0 || errno != EAGAIN) closed = true;
        break;
      }
      if (closed) {
        if (conn.bulk) {
          const std::string reply = "OK " + std::to_string(conn.bytes) + "\n";
          send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        }
        close(fd);
        conns.erase(fd);
      }
    }
  }
}

int Bulk(const sockaddr_in& address, double seconds) {
  const int fd = Connect(address);
  std::vector<char> chunk(1 << 20, 'b');
  std::memcpy(chunk.data(), "BULK\n", 5);
  uint64_t sent = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    const ssize_t n = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      std::fprintf(stderr, "send: %s\n", std::strerror(errno));
      return 1;
    }
    sent += n;
  }
  shutdown(fd, SHUT_WR);
  char reply[64] = {};
  ssize_t got = 0;
  while (got < 63) {
    const ssize_t n = read(fd, reply + got, 63 - got);
    if (n <= 0) break;
    got += n;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t received = std::strtoull(reply + 3, nullptr, 10);
  if (std::strncmp(reply, "OK ", 3) != 0 || received != sent) {
    std::fprintf(stderr, "server saw %s, sent %llu\n", reply, static_cast<unsigned long long>(sent));
    return 1;
  }
  std::printf("bytes=%llu seconds=%.6f\n", static_cast<unsigned long long>(sent), elapsed);
  return 0;
}

std::string Request(const std::string& host) {
  return "GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
}

int Latency(const sockaddr_in& address, int count, const std::string& host) {
  const std::string request = Request(host);
  std::vector<double> micros;
  micros.reserve(count);
  for (int i = 0; i < count; ++i) {
    const auto start = Clock::now();
    const int fd = Connect(address);
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char c;
    if (recv(fd, &c, 1, 0) != 1) {
      std::fprintf(stderr, "no first byte on connection %d\n", i);
      return 1;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    close(fd);
  }
  // Every sample, so a caller can pool rounds measured at different moments.
  std::printf("us=");
  for (size_t i = 0; i < micros.size(); ++i) std::printf(i ? ",%.1f" : "%.1f", micros[i]);
  std::printf("\n");
  return 0;
}

int Hold(const sockaddr_in& address, int count, const std::string& host, double seconds) {
  const std::string request = Request(host);
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = Connect(address);
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char c;
    if (recv(fd, &c, 1, 0) != 1) {
      std::fprintf(stderr, "connection %d not answered\n", i);
      return 1;
    }
    fds.push_back(fd);
  }
  std::printf("held %zu\n", fds.size());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  for (int fd : fds) close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: proxy_bench_tool server|bulk|latency|hold <ip:port> ...\n");
    return 2;
  }
  const std::string mode = argv[1];
  const sockaddr_in address = Parse(argv[2]);
  if (mode == "server") return Server(address);
  if (mode == "bulk" && argc == 4) return Bulk(address, std::atof(argv[3]));
  if (mode == "latency" && argc == 5) return Latency(address, std::atoi(argv[3]), argv[4]);
  if (mode == "hold" && argc == 6) return Hold(address, std::atoi(argv[3]), argv[4], std::atof(argv[5]));
  std::fprintf(stderr, "bad arguments for %s\n", mode.c_str());
  return 2;
}
