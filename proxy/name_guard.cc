#include "proxy/name_guard.h"

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
    const engine::IpAddress& address,
    const absl::StatusOr<absl::Span<const engine::IpAddress>>& own, engine::FailMode fail_mode) {
  if (!own.ok() && fail_mode != engine::FailMode::kOpen) {
    // Whether this is a local service cannot be told: refused (fail_mode closed).
    return absl::StrCat(engine::FormatIpAddress(address),
                        " cannot be checked against this host's own addresses (",
                        own.status().message(), ")");
  }
  // Under fail_mode: open an unreadable list still leaves the ranges, which need no reading.
  return GuardNameDestination(address, /*allowed_by_address_entry=*/false,
                              own.ok() ? *own : absl::Span<const engine::IpAddress>());
}

}  // namespace leash::proxy
