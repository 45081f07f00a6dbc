#include "proxy/testing/upstream_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace leash::proxy::testing {

UpstreamServer::UpstreamServer(const SocketAddress& want, Behaviour behaviour)
    : behaviour_(behaviour) {
  fd_ = socket(Family(want), SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage storage;
  const socklen_t length = ToSockaddr(want, &storage);
  ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&storage), length) == 0 && listen(fd_, 4096) == 0;
  if (absl::StatusOr<SocketAddress> bound = LocalAddressOf(fd_); bound.ok()) address_ = *bound;
  thread_ = std::thread([this] { AcceptLoop(); });
}

UpstreamServer::~UpstreamServer() {
  stop_ = true;
  thread_.join();
  for (std::thread& t : connections_) t.join();
  close(fd_);
}

std::string UpstreamServer::Greeting() const {
  return absl::StrCat("SERVER ", FormatSocketAddress(address_));
}

void UpstreamServer::AcceptLoop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ++accepted_;
    connections_.emplace_back([this, c] { Serve(c); });
  }
}

void UpstreamServer::Serve(int c) {
  const std::string greeting = Greeting() + "\n";
  send(c, greeting.data(), greeting.size(), MSG_NOSIGNAL);
  char buffer[16384];
  while (!stop_) {
    pollfd p{c, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = read(c, buffer, sizeof(buffer));
    if (n <= 0) break;
    if (behaviour_ == Behaviour::kResetAfterFirstBytes) {
      const linger reset{1, 0};
      setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
      close(c);  // an RST, mid-stream
      return;
    }
    send(c, buffer, n, MSG_NOSIGNAL);
  }
  shutdown(c, SHUT_WR);
  close(c);
}

}  // namespace leash::proxy::testing
