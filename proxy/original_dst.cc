#include "proxy/original_dst.h"

// glibc's <netinet/in.h> must come before the kernel's headers (linux/libc-compat.h then
// suppresses the kernel's duplicate definitions).
#include <netinet/in.h>
#include <sys/socket.h>

#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace leash::proxy {

absl::StatusOr<SocketAddress> KernelOriginalDst::Read(int fd) const {
  sockaddr_storage local{};
  socklen_t local_length = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("getsockname on fd ", fd));
  }
  sockaddr_storage original{};
  socklen_t length = sizeof(original);
  int rc;
  const char* option;
  if (local.ss_family == AF_INET6) {
    option = "IP6T_SO_ORIGINAL_DST";
    rc = getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &original, &length);
  } else {
    option = "SO_ORIGINAL_DST";
    rc = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &original, &length);
  }
  if (rc != 0) {
    const int error = errno;
    SocketAddress peer;
    sockaddr_storage peer_storage{};
    socklen_t peer_length = sizeof(peer_storage);
    std::string who = "unknown peer";
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer_storage), &peer_length) == 0 &&
        FromSockaddr(reinterpret_cast<sockaddr*>(&peer_storage), peer_length, &peer)) {
      who = FormatSocketAddress(peer);
    }
    return absl::ErrnoToStatus(error, absl::StrCat("getsockopt ", option, " for the connection from ",
                                                   who, " (no redirect recorded for it)"));
  }
  SocketAddress out;
  if (!FromSockaddr(reinterpret_cast<sockaddr*>(&original), length, &out)) {
    return absl::InternalError(absl::StrCat(option, " returned address family ",
                                            original.ss_family));
  }
  return out;
}

}  // namespace leash::proxy
