// The listening sockets leashd holds for the proxy: bound once by leashd on the listen
// addresses, one per port of the reserved range and address family, inherited by every
// leash-proxy it spawns. The proxy never binds a listener itself then: a subject's listener is
// the inherited socket of its port, listen()ed — so a squatter cannot take the port while the
// proxy respawns (leashd still holds it, and a listening socket keeps queueing connections for
// the next proxy), and a port leashd could not hold is a failed listener, never a fresh bind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace leash::proxy {

struct HeldPortSockets {
  // Port -> descriptor, per listen address: the TCP listeners.
  absl::flat_hash_map<uint16_t, int> ipv4;
  absl::flat_hash_map<uint16_t, int> ipv6;
  // The UDP sockets of the same ports: each subject's DNS filter (the redirect target of its
  // DNS to the resolvers).
  absl::flat_hash_map<uint16_t, int> udp_ipv4;
  absl::flat_hash_map<uint16_t, int> udp_ipv6;
  // Whether this host has the IPv6 listen address (probed by the proxy itself, so a range of
  // IPv6 ports leashd could not hold is never taken for "no IPv6").
  bool ipv6_available = true;
};

// Checks each of `fds` is a TCP or UDP socket bound to `ipv4_address` or `ipv6_address` on a non-zero
// port, no port twice per address and protocol, and sets O_NONBLOCK and FD_CLOEXEC on it. InvalidArgument
// names the descriptor and what is wrong: the proxy then refuses to start, since a listener on
// a socket nobody vetted is not one leashd holds.
absl::StatusOr<HeldPortSockets> AdoptHeldPortSockets(const std::vector<int>& fds,
                                                     const std::string& ipv4_address,
                                                     const std::string& ipv6_address);

// Whether `ipv6_address` can be bound here at all (a kernel-chosen port, closed at once):
// false when the host has no IPv6 or no such address.
bool Ipv6AddressExists(const std::string& ipv6_address);

}  // namespace leash::proxy
