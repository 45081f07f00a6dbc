#include "proxy/host_addresses.h"

#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "proxy/socket_address.h"

namespace leash::proxy {

absl::StatusOr<std::unique_ptr<HostAddresses>> HostAddresses::Open() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, "socket(AF_NETLINK, NETLINK_ROUTE) for address events");
  }
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error, "bind NETLINK_ROUTE to the address-event groups");
  }
  std::unique_ptr<HostAddresses> host(new HostAddresses(fd));
  if (absl::Status read = host->Reread(); !read.ok()) return read;
  return host;
}

HostAddresses::~HostAddresses() { close(netlink_fd_); }

bool HostAddresses::Changed() {
  // The messages are not parsed: any address event means the list is read again whole.
  char buffer[8192];
  bool changed = false;
  while (true) {
    const ssize_t n = recv(netlink_fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      changed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) {
      changed = true;  // events were lost: whatever they said, the list is read afresh
      continue;
    }
    return changed;  // EAGAIN: nothing more queued
  }
}

absl::Status HostAddresses::Reread() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot read this host's interface addresses (getifaddrs: ", std::strerror(errno), ")"));
  }
  std::vector<engine::IpAddress> addresses;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    const socklen_t length = entry->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                                    : sizeof(sockaddr_in);
    SocketAddress address;
    if (!FromSockaddr(entry->ifa_addr, length, &address)) continue;  // AF_PACKET and others
    if (std::find(addresses.begin(), addresses.end(), address.ip) == addresses.end()) {
      addresses.push_back(address.ip);
    }
  }
  freeifaddrs(list);
  addresses_ = std::move(addresses);
  stale_ = false;
  ++reads_;
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const engine::IpAddress>> HostAddresses::Current() {
  if (Changed()) stale_ = true;
  if (stale_) {
    if (absl::Status read = Reread(); !read.ok()) return read;
  }
  return absl::Span<const engine::IpAddress>(addresses_);
}

}  // namespace leash::proxy
