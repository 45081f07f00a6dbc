#include "proxy/name_guard.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "proxy/destination_guard.h"
#include "proxy/host_addresses.h"

namespace leash::proxy {

absl::StatusOr<absl::Span<const engine::IpAddress>> OwnAddresses(const ProxyOptions& options) {
  if (options.host_addresses == nullptr) {
    return absl::UnavailableError("no reader of this host's addresses");
  }
  return options.host_addresses->Current();
}

std::optional<std::string> GuardNamedAddress(
    const engine::IpAddress& address, uint16_t port,
    const absl::StatusOr<absl::Span<const engine::IpAddress>>& own, RouteLookup* routes,
    engine::FailMode fail_mode) {
  const bool closed = fail_mode != engine::FailMode::kOpen;
  if (!own.ok() && closed) {
    // Whether this is a local service cannot be told: refused (fail_mode closed).
    return absl::StrCat(engine::FormatIpAddress(address),
                        " cannot be checked against this host's own addresses (",
                        own.status().message(), ")");
  }
  // Under fail_mode: open an unreadable list still leaves the ranges, which need no reading.
  const absl::Span<const engine::IpAddress> host =
      own.ok() ? *own : absl::Span<const engine::IpAddress>();
  if (std::optional<std::string> refused =
          GuardNameDestination(address, /*allowed_by_address_entry=*/false, host)) {
    return refused;  // a range or an interface address: no route needs asking
  }
  std::vector<RoutedAddress> routed;
  for (const engine::IpAddress& form : RoutedForms(address)) {
    absl::StatusOr<RouteKind> kind =
        routes != nullptr ? routes->Lookup(form, port)
                          : absl::StatusOr<RouteKind>(absl::UnavailableError("no route lookup"));
    if (!kind.ok()) {
      if (!closed) continue;
      // Whether the kernel delivers it here cannot be told: refused (fail_mode closed).
      return absl::StrCat(engine::FormatIpAddress(address),
                          " cannot be checked against this host's routes (",
                          engine::FormatIpAddress(form), ": ", kind.status().message(), ")");
    }
    routed.push_back(RoutedAddress{form, *kind});
  }
  return GuardNameDestination(address, /*allowed_by_address_entry=*/false, host, routed);
}

}  // namespace leash::proxy
