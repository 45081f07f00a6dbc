#include "proxy/socket_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace leash::proxy {

std::string FormatSocketAddress(const SocketAddress& address) {
  const std::string ip = engine::FormatIpAddress(address.ip);
  if (address.ip.family == engine::IpAddress::Family::kV6) {
    return absl::StrCat("[", ip, "]:", address.port);
  }
  return absl::StrCat(ip, ":", address.port);
}

socklen_t ToSockaddr(const SocketAddress& address, sockaddr_storage* storage) {
  std::memset(storage, 0, sizeof(*storage));
  if (address.ip.family == engine::IpAddress::Family::kV4) {
    auto* in = reinterpret_cast<sockaddr_in*>(storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(address.port);
    std::memcpy(&in->sin_addr, address.ip.bytes.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(storage);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(address.port);
  std::memcpy(&in6->sin6_addr, address.ip.bytes.data(), 16);
  return sizeof(sockaddr_in6);
}

bool FromSockaddr(const sockaddr* address, socklen_t length, SocketAddress* out) {
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    out->ip = engine::IpAddress{};
    out->ip.family = engine::IpAddress::Family::kV4;
    std::memcpy(out->ip.bytes.data(), &in->sin_addr, 4);
    out->port = ntohs(in->sin_port);
    return true;
  }
  if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    out->ip = engine::IpAddress{};
    out->ip.family = engine::IpAddress::Family::kV6;
    std::memcpy(out->ip.bytes.data(), &in6->sin6_addr, 16);
    out->ip = engine::UnmapV4(out->ip);
    out->port = ntohs(in6->sin6_port);
    return true;
  }
  return false;
}

namespace {

absl::StatusOr<SocketAddress> AddressOf(int fd, bool local) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  const int rc = local ? getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length)
                       : getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  const char* call = local ? "getsockname" : "getpeername";
  if (rc != 0) return absl::ErrnoToStatus(errno, absl::StrCat(call, " on fd ", fd));
  SocketAddress out;
  if (!FromSockaddr(reinterpret_cast<sockaddr*>(&storage), length, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat(call, " on fd ", fd, ": address family ", storage.ss_family, " is not IP"));
  }
  return out;
}

}  // namespace

absl::StatusOr<SocketAddress> LocalAddressOf(int fd) { return AddressOf(fd, /*local=*/true); }
absl::StatusOr<SocketAddress> PeerAddressOf(int fd) { return AddressOf(fd, /*local=*/false); }

int Family(const SocketAddress& address) {
  return address.ip.family == engine::IpAddress::Family::kV4 ? AF_INET : AF_INET6;
}

}  // namespace leash::proxy
