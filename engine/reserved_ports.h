// The loopback ports Leash reserves for its per-subject proxy listeners. The redirect exempts
// loopback except this range, so an attempt at any port in it lands on the attempting UID's
// own listener and is refused there ("those 1000 ports on loopback are reserved for Leash").
// Shared by the nft applier, the port map and the proxy.
#pragma once

#include <cstdint>

#include "engine/ip_address.h"

namespace leash::engine {

inline constexpr uint16_t kProxyPortFirst = 18000;
inline constexpr uint16_t kProxyPortLast = 18999;
// The single-agent listener's port: inside the range, never handed to a subject.
inline constexpr uint16_t kSingleSubjectPort = 18443;

// Whether (`address`, `port`) reaches this host's loopback listeners on a port in the reserved
// range: a loopback address (127.0.0.0/8, ::1, or IPv4-mapped), or an unspecified one (0.0.0.0,
// ::), which Linux connects to the local host.
inline bool IsReservedLoopbackPort(const IpAddress& address, uint16_t port) {
  if (port < kProxyPortFirst || port > kProxyPortLast) return false;
  const IpAddress ip = UnmapV4(address);
  if (ip.family == IpAddress::Family::kV4) {
    return ip.bytes[0] == 127 ||
           (ip.bytes[0] == 0 && ip.bytes[1] == 0 && ip.bytes[2] == 0 && ip.bytes[3] == 0);
  }
  for (int i = 0; i < 15; ++i) {
    if (ip.bytes[i] != 0) return false;
  }
  return ip.bytes[15] == 1 || ip.bytes[15] == 0;
}

}  // namespace leash::engine
