// Where a decision made on a name (TLS SNI, HTTP Host, a DNS question) may lead. A name on an
// allowed suffix can be made to resolve anywhere (DNS rebinding, a hosts line, a zone the agent
// controls), so the address it leads to is guarded on its own: never loopback, link-local, the
// cloud metadata addresses, private or shared (CGNAT) space, an unspecified, multicast or
// reserved address, the same carried inside an IPv6 form (IPv4-mapped, IPv4-compatible, NAT64,
// 6to4), nor any address of this host's own interfaces (a local service reached by name) —
// unless an IP/CIDR allow entry of the subject's policy names that address explicitly.
//
// Pure logic: no syscalls. The host's addresses come from the caller (host_addresses.h reads
// them). The documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
// 2001:db8::/32) are public here: the project's test hosts live on them.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/ip_address.h"

namespace leash::proxy {

// Why a name may not lead to an address on its own.
enum class GuardedRange : uint8_t {
  kPublic,        // none: a name may lead here
  kUnspecified,   // 0.0.0.0/8, ::
  kLoopback,      // 127.0.0.0/8, ::1
  kMetadata,      // 169.254.169.254, fd00:ec2::254
  kLinkLocal,     // 169.254.0.0/16, fe80::/10
  kPrivate,       // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10, 64:ff9b:1::/48
  kSharedSpace,   // 100.64.0.0/10 (carrier-grade NAT)
  kMulticast,     // 224.0.0.0/4, ff00::/8
  kReserved,      // 240.0.0.0/4 and 255.255.255.255, 192.0.0.0/24
  kThisHost,      // an address of one of this host's interfaces
};

struct Classification {
  GuardedRange range = GuardedRange::kPublic;
  // The range as written for an operator ("link-local 169.254.0.0/16"); empty when public.
  absl::string_view range_text;
  // The IPv4 address an IPv6 form carries, when that is what was classified.
  std::optional<engine::IpAddress> carried_v4;
};

// Which range `address` falls in. `host_addresses`: this host's interface addresses (an
// IPv4-mapped form of one counts as it).
Classification ClassifyDestination(const engine::IpAddress& address,
                                   absl::Span<const engine::IpAddress> host_addresses);

// The refusal when a name may not lead to `address`, nullopt when it may: a public address,
// or any address when `allowed_by_address_entry` (an IP/CIDR allow entry of the subject's
// policy matched it: with a CompiledPolicy, DecideNetwork on the address is allowed with
// matched_on kIp). The refusal names the address, its range and the entry that would allow it,
// e.g. "169.254.169.254 is the cloud metadata address 169.254.169.254, where a name never
// leads on its own; an IP entry allows it: leash net allow 169.254.169.254/32".
std::optional<std::string> GuardNameDestination(const engine::IpAddress& address,
                                                bool allowed_by_address_entry,
                                                absl::Span<const engine::IpAddress> host_addresses);

// The allow entry that names exactly `address` ("10.1.2.3/32", "fd00:ec2::254/128"); an
// IPv4-mapped address is named by the IPv4 address it carries, as the matcher reads it.
std::string ExactAddressEntry(const engine::IpAddress& address);

}  // namespace leash::proxy
