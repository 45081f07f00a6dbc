#include "test/network/tagged_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace leash::testing {
namespace {

// <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h> clash with glibc's
// headers; the two option numbers are stable ABI.
constexpr int kSoOriginalDst = 80;       // SO_ORIGINAL_DST, level SOL_IP
constexpr int kIp6tSoOriginalDst = 80;   // IP6T_SO_ORIGINAL_DST, level SOL_IPV6

std::string Format(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    return absl::StrCat(text, ":", ntohs(v4->sin_port));
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
  inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
  return absl::StrCat("[", text, "]:", ntohs(v6->sin6_port));
}

}  // namespace

std::string OriginalDestination(int fd) {
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return "none";
  sockaddr_storage original{};
  length = sizeof(original);
  const int rc = local.ss_family == AF_INET
                     ? getsockopt(fd, SOL_IP, kSoOriginalDst, &original, &length)
                     : getsockopt(fd, SOL_IPV6, kIp6tSoOriginalDst, &original, &length);
  if (rc != 0) return "none";
  return Format(original);
}

absl::StatusOr<std::unique_ptr<TaggedServer>> TaggedServer::Start(std::vector<Endpoint> endpoints) {
  std::unique_ptr<TaggedServer> server(new TaggedServer());
  server->endpoints_ = std::move(endpoints);
  for (const Endpoint& e : server->endpoints_) {
    sockaddr_storage address{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (inet_pton(AF_INET, e.address.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(e.port);
      length = sizeof(*v4);
    } else if (inet_pton(AF_INET6, e.address.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(e.port);
      length = sizeof(*v6);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("not an address: ", e.address));
    }
    const int fd = socket(address.ss_family, (e.udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
    server->fds_.push_back(fd);
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (address.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("bind ", e.address, " port ", e.port));
    }
    if (!e.udp && listen(fd, 128) != 0) return absl::ErrnoToStatus(errno, "listen");
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
    server->ports_.push_back(ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port));
  }
  server->stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (server->stop_fd_ < 0) return absl::ErrnoToStatus(errno, "eventfd");
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

TaggedServer::~TaggedServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (int fd : fds_) close(fd);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void TaggedServer::Serve() {
  std::vector<pollfd> polls;
  for (int fd : fds_) polls.push_back({fd, POLLIN, 0});
  polls.push_back({stop_fd_, POLLIN, 0});
  while (true) {
    if (poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (polls.back().revents != 0) return;
    for (size_t i = 0; i < fds_.size(); ++i) {
      if (polls[i].revents == 0) continue;
      const Endpoint& e = endpoints_[i];
      if (e.udp) {
        char buffer[512];
        sockaddr_storage peer{};
        socklen_t length = sizeof(peer);
        if (recvfrom(fds_[i], buffer, sizeof(buffer), MSG_DONTWAIT,
                     reinterpret_cast<sockaddr*>(&peer), &length) >= 0) {
          sendto(fds_[i], e.tag.data(), e.tag.size(), 0, reinterpret_cast<sockaddr*>(&peer),
                 length);
        }
        continue;
      }
      const int client = accept4(fds_[i], nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) continue;
      const std::string reply = absl::StrCat(e.tag, " ", OriginalDestination(client), "\n");
      (void)!write(client, reply.data(), reply.size());
      close(client);
    }
  }
}

}  // namespace leash::testing
