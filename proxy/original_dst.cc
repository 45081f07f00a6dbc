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
  absl::StatusOr<SocketAddress> local = LocalAddressOf(fd);
  if (!local.ok()) return local.status();
  sockaddr_storage original{};
  socklen_t length = sizeof(original);
  int rc;
  const char* option;
  if (local->ip.family == engine::IpAddress::Family::kV6) {
    option = "IP6T_SO_ORIGINAL_DST";
    rc = getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &original, &length);
  } else {
    option = "SO_ORIGINAL_DST";
    rc = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &original, &length);
  }
  if (rc != 0) {
    const int error = errno;
    absl::StatusOr<SocketAddress> peer = PeerAddressOf(fd);
    const std::string who = peer.ok() ? FormatSocketAddress(*peer) : "unknown peer";
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
