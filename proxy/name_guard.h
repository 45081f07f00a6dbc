// The destination guard (proxy/destination_guard.h) as the proxy applies it to an address a
// name led to, whether a connection's resolve-then-connect or the DNS filter's answer: this
// host's own addresses read from the proxy's reader, and a reader that cannot answer judged by
// the subject's fail_mode. Loop thread only (HostAddresses is).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/compiled_policy.h"
#include "engine/network_entry.h"
#include "proxy/proxy_context.h"

namespace leash::proxy {

// This host's addresses, or why they cannot be read.
absl::StatusOr<absl::Span<const engine::IpAddress>> OwnAddresses(const ProxyOptions& options);

// Why `address` (which no IP/CIDR entry of the subject names) must not be used, or nullopt.
// Under fail_mode: closed an unreadable `own` refuses; under open only the ranges are checked.
std::optional<std::string> GuardNamedAddress(
    const engine::IpAddress& address,
    const absl::StatusOr<absl::Span<const engine::IpAddress>>& own, engine::FailMode fail_mode);

}  // namespace leash::proxy
