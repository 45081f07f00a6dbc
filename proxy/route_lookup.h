// What the kernel's routing says about a destination the proxy is about to connect to: the
// narrow interface between the destination guard and rtnetlink (netlink_route_lookup.h is the
// real one; testing/fake_route_lookup.h stands in for unit tests).
//
// "This host" is what the kernel routes locally, not the interface list: an address can be
// delivered here through a `local` route (AnyIP: `ip route add local 192.0.2.224/27 dev lo`)
// with no interface holding it, and a connection there reaches every service on the wildcard.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ip_address.h"

namespace leash::proxy {

// The kind of route the kernel answered with (its rtm_type), folded to what the guard needs.
enum class RouteKind : uint8_t {
  kRemote,     // RTN_UNICAST: off this host, directly or through a gateway
  kLocal,      // RTN_LOCAL: delivered to this host (its addresses, loopback, AnyIP ranges)
  kBroadcast,  // RTN_BROADCAST: a broadcast address of one of this host's networks
  kAnycast,    // RTN_ANYCAST: an anycast address this host answers for
  kMulticast,  // RTN_MULTICAST
  // No route leads there (RTN_UNREACHABLE, RTN_PROHIBIT, RTN_THROW, or the kernel's
  // "unreachable" answers ENETUNREACH, EHOSTUNREACH, EACCES): a connect fails on its own.
  kNoRoute,
};

// "local", "broadcast", ... as `ip route` names them.
inline absl::string_view RouteKindName(RouteKind kind) {
  switch (kind) {
    case RouteKind::kRemote: return "unicast";
    case RouteKind::kLocal: return "local";
    case RouteKind::kBroadcast: return "broadcast";
    case RouteKind::kAnycast: return "anycast";
    case RouteKind::kMulticast: return "multicast";
    case RouteKind::kNoRoute: return "unreachable";
  }
  return "unknown";
}

class RouteLookup {
 public:
  virtual ~RouteLookup() = default;
  // The route the kernel would give this process's TCP connection to `address` (IPv4 or IPv6;
  // an IPv4-mapped address is looked up as the IPv4 address it carries, which is where a
  // dual-stack socket connects) and `port` (0: none given). An error when the kernel cannot be
  // asked or answers with something this cannot read (a blackhole route answers EINVAL, which
  // cannot be told from a bad request): the caller refuses what it cannot check. Not
  // thread-safe: one thread (the proxy's event loop).
  virtual absl::StatusOr<RouteKind> Lookup(const engine::IpAddress& address, uint16_t port) = 0;
};

}  // namespace leash::proxy
