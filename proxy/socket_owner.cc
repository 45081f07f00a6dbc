#include "proxy/socket_owner.h"

// glibc's <netinet/in.h> before the kernel's headers (linux/libc-compat.h then suppresses the
// kernel's duplicate definitions).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "proxy/socket_address.h"

namespace leash::proxy {
namespace {

// The kernel answers an exact-socket request from within sendmsg(); the timeout only bounds a
// kernel that does not (the event loop must never wait on it for long).
constexpr timeval kReceiveTimeout{1, 0};

// A minisocket's record reports uid 0 (inet_twsk_diag_fill), which would read as root: a
// socket in TIME_WAIT (or a request socket) has no owner to report. Values of the kernel's
// TCP state enum (include/net/tcp_states.h).
constexpr uint8_t kTcpTimeWait = 6;
constexpr uint8_t kTcpNewSynRecv = 12;

void CopyAddress(const SocketAddress& address, __be32 out[4]) {
  std::memcpy(out, address.ip.bytes.data(),
              address.ip.family == engine::IpAddress::Family::kV4 ? 4 : 16);
}

std::string AccountOf(uint32_t uid) {
  passwd entry;
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return "";
  }
  return entry.pw_name;
}

}  // namespace

absl::StatusOr<SocketOwner> KernelSocketOwner::OwnerOfPeer(int fd) const {
  absl::StatusOr<SocketAddress> peer = PeerAddressOf(fd);
  if (!peer.ok()) return peer.status();
  absl::StatusOr<SocketAddress> local = LocalAddressOf(fd);
  if (!local.ok()) return local.status();
  const std::string tuple =
      absl::StrCat(FormatSocketAddress(*peer), " -> ", FormatSocketAddress(*local));

  const int netlink = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (netlink < 0) {
    return absl::ErrnoToStatus(errno, "socket(AF_NETLINK, NETLINK_SOCK_DIAG)");
  }
  absl::Cleanup close_netlink = [netlink] { close(netlink); };
  setsockopt(netlink, SOL_SOCKET, SO_RCVTIMEO, &kReceiveTimeout, sizeof(kReceiveTimeout));

  // The connecting socket's own view of the connection: its local address is our peer, its
  // remote address is ours (a direct connection is not NATed, so both ends agree on it).
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = static_cast<uint8_t>(Family(*peer));
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  message.request.id.idiag_sport = htons(peer->port);
  message.request.id.idiag_dport = htons(local->port);
  CopyAddress(*peer, message.request.id.idiag_src);
  CopyAddress(*local, message.request.id.idiag_dst);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(netlink, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof(kernel)) < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("sock_diag request for ", tuple));
  }

  alignas(nlmsghdr) char reply[8192];
  ssize_t length;
  do {
    length = recv(netlink, reply, sizeof(reply), 0);
  } while (length < 0 && errno == EINTR);
  if (length < 0) return absl::ErrnoToStatus(errno, absl::StrCat("sock_diag reply for ", tuple));
  size_t remaining = static_cast<size_t>(length);
  for (auto* header = reinterpret_cast<nlmsghdr*>(reply); NLMSG_OK(header, remaining);
       header = NLMSG_NEXT(header, remaining)) {
    if (header->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
      if (error->error == 0) continue;
      if (error->error == -ENOENT) {
        return absl::NotFoundError(
            absl::StrCat("no socket of this host has the connection ", tuple,
                         " (the peer is remote or already closed)"));
      }
      return absl::ErrnoToStatus(-error->error, absl::StrCat("sock_diag lookup of ", tuple));
    }
    if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        header->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      continue;
    }
    const auto* found = static_cast<const inet_diag_msg*>(NLMSG_DATA(header));
    if (found->idiag_state == kTcpTimeWait || found->idiag_state == kTcpNewSynRecv) {
      return absl::NotFoundError(absl::StrCat("the socket of ", tuple,
                                              " is already closed (TIME_WAIT): it has no owner"));
    }
    SocketOwner owner;
    owner.uid = found->idiag_uid;
    owner.account = AccountOf(owner.uid);
    return owner;
  }
  return absl::InternalError(absl::StrCat("sock_diag gave no answer about ", tuple));
}

}  // namespace leash::proxy
