#include "proxy/held_port_sockets.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "engine/ip_address.h"
#include "proxy/socket_address.h"

namespace leash::proxy {

bool Ipv6AddressExists(const std::string& ipv6_address) {
  std::optional<engine::IpAddress> ip = engine::ParseIpAddress(ipv6_address);
  if (!ip) return false;
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_storage storage;
  const socklen_t length = ToSockaddr(SocketAddress{*ip, 0}, &storage);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&storage), length) == 0;
  close(fd);
  return bound;
}

absl::StatusOr<HeldPortSockets> AdoptHeldPortSockets(const std::vector<int>& fds,
                                                     const std::string& ipv4_address,
                                                     const std::string& ipv6_address) {
  std::optional<engine::IpAddress> v4 = engine::ParseIpAddress(ipv4_address);
  std::optional<engine::IpAddress> v6 = engine::ParseIpAddress(ipv6_address);
  if (!v4 || !v6) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad listen address ", !v4 ? ipv4_address : ipv6_address));
  }
  HeldPortSockets held;
  held.ipv6_available = Ipv6AddressExists(ipv6_address);
  for (int fd : fds) {
    auto bad = [fd](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("inherited port socket ", fd, " ", what,
                       "; leashd hands the proxy TCP and UDP sockets it bound on the listen addresses"));
    };
    struct stat info;
    if (fstat(fd, &info) != 0) return bad(absl::StrCat("is not open (", strerror(errno), ")"));
    if (!S_ISSOCK(info.st_mode)) return bad("is not a socket");
    int type = 0, protocol = 0;
    socklen_t size = sizeof(type);
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size);
    size = sizeof(protocol);
    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &size);
    const bool tcp = type == SOCK_STREAM && protocol == IPPROTO_TCP;
    const bool udp = type == SOCK_DGRAM && protocol == IPPROTO_UDP;
    if (!tcp && !udp) return bad("is not a TCP or UDP socket");
    absl::StatusOr<SocketAddress> local = LocalAddressOf(fd);
    if (!local.ok()) return bad(local.status().message());
    if (local->port == 0) return bad("is not bound to a port");
    absl::flat_hash_map<uint16_t, int>* table = nullptr;
    if (local->ip == *v4) table = tcp ? &held.ipv4 : &held.udp_ipv4;
    if (local->ip == *v6) table = tcp ? &held.ipv6 : &held.udp_ipv6;
    if (table == nullptr) {
      return bad(absl::StrCat("is bound to ", FormatSocketAddress(*local), ", not to ",
                              ipv4_address, " or ", ipv6_address));
    }
    if (!table->emplace(local->port, fd).second) {
      return bad(absl::StrCat("is a second ", tcp ? "TCP" : "UDP", " socket for ",
                              FormatSocketAddress(*local)));
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
      return bad(absl::StrCat("cannot be made non-blocking (", strerror(errno), ")"));
    }
  }
  return held;
}

}  // namespace leash::proxy
