// An IP address and TCP port as the proxy handles them: converted to and from the kernel's
// sockaddr forms and written the way the decision log and operators read them.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/ip_address.h"

namespace leash::proxy {

struct SocketAddress {
  engine::IpAddress ip;
  uint16_t port = 0;

  bool operator==(const SocketAddress& other) const {
    return ip == other.ip && port == other.port;
  }
  bool operator!=(const SocketAddress& other) const { return !(*this == other); }
  template <typename H>
  friend H AbslHashValue(H h, const SocketAddress& a) {
    return H::combine(std::move(h), a.ip.family, a.ip.bytes, a.port);
  }
};

// "192.0.2.1:443", "[2001:db8::1]:443".
std::string FormatSocketAddress(const SocketAddress& address);

// Fills `storage` and returns the length to pass to bind/connect.
socklen_t ToSockaddr(const SocketAddress& address, sockaddr_storage* storage);

// Reads an AF_INET / AF_INET6 sockaddr; an IPv4-mapped IPv6 address comes back as IPv4 so a
// comparison never depends on which socket family reported it. False for other families.
bool FromSockaddr(const sockaddr* address, socklen_t length, SocketAddress* out);

// The local (getsockname) or remote (getpeername) address of socket `fd`. Errors carry the
// errno and the descriptor.
absl::StatusOr<SocketAddress> LocalAddressOf(int fd);
absl::StatusOr<SocketAddress> PeerAddressOf(int fd);

// The address family constant for `address` (AF_INET or AF_INET6).
int Family(const SocketAddress& address);

}  // namespace leash::proxy
