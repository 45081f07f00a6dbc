// The destination guard (proxy/destination_guard.h) as the proxy applies it to an address a
// name led to, whether a connection's resolve-then-connect or the DNS filter's answer: this
// host's own addresses read from the proxy's reader, the kernel's route to the address (and to
// the IPv4 address an IPv6 form carries) asked of its route lookup, and a reader or a lookup
// that cannot answer judged by the subject's fail_mode. Loop thread only (HostAddresses and
// the route lookup are).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/compiled_policy.h"
#include "engine/network_entry.h"
#include "proxy/proxy_context.h"
#include "proxy/route_lookup.h"

namespace leash::proxy {

// This host's addresses, or why they cannot be read.
absl::StatusOr<absl::Span<const engine::IpAddress>> OwnAddresses(const ProxyOptions& options);

// Why `address` (which no IP/CIDR entry of the subject names) must not be used for a
// connection to `port` (0: any, for a DNS answer), or nullopt. The ranges and `own` are checked
// first; only an address they pass is looked up in `routes`. Under fail_mode: closed an
// unreadable `own`, a missing `routes` or a failed lookup refuses; under open what could not
// be read is skipped and the rest still holds.
std::optional<std::string> GuardNamedAddress(
    const engine::IpAddress& address, uint16_t port,
    const absl::StatusOr<absl::Span<const engine::IpAddress>>& own, RouteLookup* routes,
    engine::FailMode fail_mode);

}  // namespace leash::proxy
