// A client for the proxy's integration tests, run as a test account inside the namespace:
// connects to ADDRESS, sends an HTTP request with Host NAME, a TLS ClientHello with SNI NAME,
// or nothing, and prints on one line what came back:
//   LINE <first line>   |   RESET   |   EOF   |   TIMEOUT   |   CONNECT-ERROR <why>
// Usage: probe <ip:port | [ip6]:port> <http|tls|none> [NAME]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "proxy/http_request_host.h"
#include "proxy/socket_address.h"
#include "proxy/testing/client_hello_builder.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: probe <ip:port|[ip6]:port> <http|tls|none> [NAME]\n");
    return 2;
  }
  const std::string target = argv[1];
  const std::string mode = argv[2];
  const std::string name = argc > 3 ? argv[3] : "";
  std::string host;
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos || !leash::proxy::SplitAuthorityHost(target, &host)) {
    std::fprintf(stderr, "bad address %s\n", target.c_str());
    return 2;
  }
  std::optional<leash::engine::IpAddress> ip = leash::engine::ParseIpAddress(host);
  if (!ip) {
    std::fprintf(stderr, "bad address %s\n", target.c_str());
    return 2;
  }
  leash::proxy::SocketAddress address{*ip, static_cast<uint16_t>(std::stoi(target.substr(colon + 1)))};
  const int fd = socket(leash::proxy::Family(address), SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_storage storage;
  const socklen_t length = leash::proxy::ToSockaddr(address, &storage);
  if (connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    std::printf("CONNECT-ERROR %s\n", std::strerror(errno));
    return 0;
  }
  std::string first;
  if (mode == "http") {
    first = "GET / HTTP/1.1\r\nHost: " + name + "\r\n\r\n";
  } else if (mode == "tls") {
    leash::proxy::testing::ClientHelloSpec spec;
    spec.sni = name;
    first = leash::proxy::testing::BuildClientHello(spec);
  }
  if (!first.empty() && send(fd, first.data(), first.size(), MSG_NOSIGNAL) < 0) {
    if (errno == ECONNRESET) {
      std::printf("RESET\n");
    } else {
      std::printf("SEND-ERROR %s\n", std::strerror(errno));
    }
    return 0;
  }
  std::string line;
  char c;
  while (true) {
    const ssize_t n = recv(fd, &c, 1, 0);
    if (n == 1) {
      if (c == '\n') break;
      line.push_back(c);
      continue;
    }
    if (n == 0) {
      std::printf(line.empty() ? "EOF\n" : "LINE %s\n", line.c_str());
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) {
      std::printf("RESET\n");
    } else if (errno == EAGAIN) {
      std::printf("TIMEOUT\n");
    } else {
      std::printf("RECV-ERROR %s\n", std::strerror(errno));
    }
    return 0;
  }
  std::printf("LINE %s\n", line.c_str());
  close(fd);
  return 0;
}
