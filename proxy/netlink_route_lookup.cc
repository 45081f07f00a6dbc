#include "proxy/netlink_route_lookup.h"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace leash::proxy {
namespace {

// A resolver answering with thousands of addresses cannot grow the cache without bound: past
// this it starts again (a miss costs one round trip, never a wrong answer).
constexpr size_t kMaxCached = 4096;

// What makes "this host" change: routes (a `local` route added to lo), policy rules, addresses
// (each brings local and broadcast routes), links (a link going down flushes routes, which
// IPv4 does not report route by route) and nexthop objects.
constexpr unsigned kEventGroups[] = {
    RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE,
    RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_LINK, RTNLGRP_NEXTHOP,
};

absl::Status Errno(int error, absl::string_view call) {
  return absl::ErrnoToStatus(error, absl::StrCat(call, " (the route lookup of the destination guard)"));
}

// The kind an RTM_NEWROUTE answer's rtm_type means; an error for one this cannot read.
absl::StatusOr<RouteKind> KindOf(unsigned char type) {
  switch (type) {
    case RTN_UNICAST:
      return RouteKind::kRemote;
    case RTN_LOCAL:
      return RouteKind::kLocal;
    case RTN_BROADCAST:
      return RouteKind::kBroadcast;
    case RTN_ANYCAST:
      return RouteKind::kAnycast;
    case RTN_MULTICAST:
      return RouteKind::kMulticast;
    case RTN_UNREACHABLE:
    case RTN_PROHIBIT:
    case RTN_BLACKHOLE:
    case RTN_THROW:
      return RouteKind::kNoRoute;
    default:
      return absl::UnavailableError(
          absl::StrCat("the kernel answered with a route of type ", type,
                       ", which the destination guard cannot read"));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetlinkRouteLookup>> NetlinkRouteLookup::Open() {
  const int events = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (events < 0) return Errno(errno, "socket(AF_NETLINK, NETLINK_ROUTE) for route events");
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(events, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int error = errno;
    close(events);
    return Errno(error, "bind NETLINK_ROUTE for route events");
  }
  for (unsigned group : kEventGroups) {
    if (setsockopt(events, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0) {
      const int error = errno;
      close(events);
      return Errno(error, absl::StrCat("NETLINK_ADD_MEMBERSHIP to rtnetlink group ", group));
    }
  }
  const int requests = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (requests < 0) {
    const int error = errno;
    close(events);
    return Errno(error, "socket(AF_NETLINK, NETLINK_ROUTE) for route lookups");
  }
  if (bind(requests, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int error = errno;
    close(events);
    close(requests);
    return Errno(error, "bind NETLINK_ROUTE for route lookups");
  }
  return std::unique_ptr<NetlinkRouteLookup>(new NetlinkRouteLookup(events, requests));
}

NetlinkRouteLookup::~NetlinkRouteLookup() {
  close(events_fd_);
  close(request_fd_);
}

bool NetlinkRouteLookup::Changed() {
  // The messages are not parsed: any event means every cached answer is asked again.
  char buffer[8192];
  bool changed = false;
  while (true) {
    const ssize_t n = recv(events_fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      changed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) {
      changed = true;  // events were lost: whatever they said, nothing cached stands
      continue;
    }
    return changed;  // EAGAIN: nothing more queued
  }
}

absl::StatusOr<RouteKind> NetlinkRouteLookup::Lookup(const engine::IpAddress& address,
                                                     uint16_t port) {
  if (Changed() && !cache_.empty()) {
    cache_.clear();
    ++invalidations_;
  }
  const Key key{engine::UnmapV4(address), port};
  if (auto cached = cache_.find(key); cached != cache_.end()) return cached->second;
  absl::StatusOr<RouteKind> kind = Ask(key.address, port);
  if (!kind.ok()) return kind;  // not cached: the next connection asks again
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_.emplace(key, *kind);
  return kind;
}

absl::StatusOr<RouteKind> NetlinkRouteLookup::Ask(const engine::IpAddress& address,
                                                  uint16_t port) {
  ++kernel_lookups_;
  const bool v4 = address.family == engine::IpAddress::Family::kV4;
  alignas(nlmsghdr) char buffer[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* request = mnl_nlmsg_put_header(buffer);
  request->nlmsg_type = RTM_GETROUTE;
  request->nlmsg_flags = NLM_F_REQUEST;
  request->nlmsg_seq = ++sequence_;
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(request, sizeof(rtmsg)));
  rtm->rtm_family = v4 ? AF_INET : AF_INET6;
  rtm->rtm_dst_len = v4 ? 32 : 128;
  mnl_attr_put(request, RTA_DST, v4 ? 4 : 16, address.bytes.data());
  // As the proxy's own connection meets the routing rules: TCP, to this port, from this
  // process's UID (a socket's UID is its creator's), with no mark.
  mnl_attr_put_u8(request, RTA_IP_PROTO, IPPROTO_TCP);
  if (port != 0) mnl_attr_put_u16(request, RTA_DPORT, htons(port));
  mnl_attr_put_u32(request, RTA_UID, geteuid());
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(request_fd_, request, request->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof(kernel)) < 0) {
    return Errno(errno, "sendto RTM_GETROUTE");
  }
  // The kernel answers a route request while handling the send, so the answer is queued by
  // now: a non-blocking read never leaves the event loop waiting on the kernel.
  while (true) {
    const ssize_t n = recv(request_fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Errno(errno, errno == EAGAIN ? "no answer queued to RTM_GETROUTE" : "recv RTM_GETROUTE");
    }
    const auto* reply = reinterpret_cast<const nlmsghdr*>(buffer);
    if (!mnl_nlmsg_ok(reply, static_cast<int>(n))) {
      return absl::UnavailableError("a truncated answer to RTM_GETROUTE");
    }
    if (reply->nlmsg_seq != sequence_) continue;  // an answer to an earlier, abandoned request
    if (reply->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(reply));
      switch (-error->error) {
        // The kernel's own "no route": the connection would fail the same way.
        case ENETUNREACH:
        case EHOSTUNREACH:
        case EACCES:
          return RouteKind::kNoRoute;
        default:
          // EINVAL among them: a blackhole route and a request the kernel could not read
          // answer alike, so it is not taken as either.
          return Errno(-error->error, "RTM_GETROUTE");
      }
    }
    if (reply->nlmsg_type != RTM_NEWROUTE) {
      return absl::UnavailableError(
          absl::StrCat("RTM_GETROUTE answered with message type ", reply->nlmsg_type));
    }
    const auto* answer = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(reply));
    return KindOf(answer->rtm_type);
  }
}

}  // namespace leash::proxy
