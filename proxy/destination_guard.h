// Where a decision made on a name (TLS SNI, HTTP Host, a DNS question) may lead. A name on an
// allowed suffix can be made to resolve anywhere (DNS rebinding, a hosts line, a zone the agent
// controls), so the address it leads to is guarded on its own: never loopback, link-local, a
// cloud's metadata or platform address (engine/guarded_ranges.h lists them with their
// sources), private or shared (CGNAT) space, an unspecified, multicast or reserved address, the
// same carried inside an IPv6 form (IPv4-mapped, IPv4-compatible, NAT64, 6to4), nor this host
// itself: an address of its interfaces, or one the kernel routes locally (a `local` route such
// as AnyIP's, a broadcast or anycast route) — unless an IP/CIDR allow entry of the subject's
// policy names that address explicitly.
//
// Pure logic: no syscalls. The host's addresses and the kernel's routes come from the caller
// (host_addresses.h and route_lookup.h read them). The documentation ranges (192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are public here: the project's test hosts
// live on them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/guarded_ranges.h"
#include "engine/ip_address.h"
#include "proxy/route_lookup.h"

namespace leash::proxy {

using engine::GuardedRange;

struct Classification {
  GuardedRange range = GuardedRange::kPublic;
  // The range as written for an operator ("in link-local 169.254.0.0/16"); empty when public.
  absl::string_view range_text;
  // The IPv4 address an IPv6 form carries, when that is what was classified.
  std::optional<engine::IpAddress> carried_v4;
};

// What the kernel answered for one of the addresses RoutedForms named.
struct RoutedAddress {
  engine::IpAddress address;
  RouteKind kind = RouteKind::kRemote;
};

// The addresses whose routes say whether a connection to `address` lands on this host: the
// address itself (an IPv4-mapped one as the IPv4 address, which is what a dual-stack socket
// connects to) and, for an IPv6 form that carries one (IPv4-compatible, NAT64, 6to4), the IPv4
// address, which a translator on this host would deliver to. One or two addresses.
std::vector<engine::IpAddress> RoutedForms(const engine::IpAddress& address);

// Which range `address` falls in. `host_addresses`: this host's interface addresses (an
// IPv4-mapped form of one counts as it). `routes`: the kernel's answers for RoutedForms(address)
// (those it gave); a local, broadcast or anycast route is this host, a multicast one multicast,
// a unicast or unreachable one nothing (an unreachable destination fails on its own).
Classification ClassifyDestination(const engine::IpAddress& address,
                                   absl::Span<const engine::IpAddress> host_addresses,
                                   absl::Span<const RoutedAddress> routes = {});

// The refusal when a name may not lead to `address`, nullopt when it may: a public address,
// or any address when `allowed_by_address_entry` (an IP/CIDR allow entry of the subject's
// policy matched it: with a CompiledPolicy, DecideNetwork on the address is allowed with
// matched_on kIp). The refusal names the address, its range and the entry that would allow it,
// e.g. "169.254.169.254 is the cloud metadata address, where a name never leads on its own; an
// IP allow entry of this subject allows it: add '169.254.169.254/32' to its network.allow
// (leash net allow 169.254.169.254/32)".
std::optional<std::string> GuardNameDestination(const engine::IpAddress& address,
                                                bool allowed_by_address_entry,
                                                absl::Span<const engine::IpAddress> host_addresses,
                                                absl::Span<const RoutedAddress> routes = {});

// The allow entry that names exactly `address` ("10.1.2.3/32", "fd00:ec2::254/128"); an
// IPv4-mapped address is named by the IPv4 address it carries, as the matcher reads it.
std::string ExactAddressEntry(const engine::IpAddress& address);

}  // namespace leash::proxy
