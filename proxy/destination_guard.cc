#include "proxy/destination_guard.h"

#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace leash::proxy {
namespace {

using engine::GuardedRangeEntry;
using engine::IpAddress;

const engine::GuardedRangeEntry* RangeOf(const IpAddress& address) {
  return engine::GuardedRangeOf(address);
}

IpAddress V4From(const uint8_t* bytes) {
  IpAddress v4;
  v4.family = IpAddress::Family::kV4;
  std::memcpy(v4.bytes.data(), bytes, 4);
  return v4;
}

bool StartsWith(const IpAddress& address, std::initializer_list<uint8_t> prefix) {
  size_t i = 0;
  for (uint8_t byte : prefix) {
    if (address.bytes[i++] != byte) return false;
  }
  return true;
}

// The IPv4 address an IPv6 form carries to the same destination: IPv4-mapped (::ffff:a.b.c.d,
// which a dual-stack socket connects to over IPv4), IPv4-compatible (::a.b.c.d), the NAT64
// well-known prefix (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::/48).
std::optional<IpAddress> CarriedV4(const IpAddress& address) {
  if (address.family != IpAddress::Family::kV6) return std::nullopt;
  static constexpr std::array<uint8_t, 10> kZero10{};
  const bool zero_80 = std::memcmp(address.bytes.data(), kZero10.data(), 10) == 0;
  if (zero_80 && address.bytes[10] == 0xff && address.bytes[11] == 0xff) {
    return V4From(&address.bytes[12]);  // ::ffff:a.b.c.d
  }
  if (zero_80 && address.bytes[10] == 0 && address.bytes[11] == 0) {
    return V4From(&address.bytes[12]);  // ::a.b.c.d (:: and ::1 are matched before this)
  }
  if (StartsWith(address, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) {
    return V4From(&address.bytes[12]);  // 64:ff9b::/96
  }
  if (StartsWith(address, {0x20, 0x02})) return V4From(&address.bytes[2]);  // 2002::/16
  return std::nullopt;
}

bool IsHostAddress(const IpAddress& address, absl::Span<const IpAddress> host_addresses) {
  const IpAddress unmapped = engine::UnmapV4(address);
  for (const IpAddress& own : host_addresses) {
    if (engine::UnmapV4(own) == unmapped) return true;
  }
  return false;
}

// What a route of `kind` makes of its address, for a refusal: this host, multicast, or
// nothing (nullopt).
std::optional<std::pair<GuardedRange, absl::string_view>> RouteRange(RouteKind kind) {
  switch (kind) {
    case RouteKind::kLocal:
      return std::make_pair(GuardedRange::kThisHost,
                            absl::string_view("routed to this host (the kernel's route for it is local)"));
    case RouteKind::kBroadcast:
      return std::make_pair(GuardedRange::kThisHost,
                            absl::string_view("a broadcast address of this host's networks (the "
                                              "kernel's route for it is broadcast)"));
    case RouteKind::kAnycast:
      return std::make_pair(GuardedRange::kThisHost,
                            absl::string_view("an anycast address this host answers for (the "
                                              "kernel's route for it is anycast)"));
    case RouteKind::kMulticast:
      return std::make_pair(GuardedRange::kMulticast,
                            absl::string_view("routed as multicast (the kernel's route for it is "
                                              "multicast)"));
    case RouteKind::kRemote:
    case RouteKind::kNoRoute:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::vector<IpAddress> RoutedForms(const IpAddress& address) {
  std::vector<IpAddress> forms = {engine::UnmapV4(address)};
  if (forms.front().family == IpAddress::Family::kV6) {
    if (std::optional<IpAddress> carried = CarriedV4(address)) forms.push_back(*carried);
  }
  return forms;
}

Classification ClassifyDestination(const IpAddress& address,
                                   absl::Span<const IpAddress> host_addresses,
                                   absl::Span<const RoutedAddress> routes) {
  Classification result;
  if (const GuardedRangeEntry* range = RangeOf(address)) {
    result.range = range->range;
    result.range_text = range->text;
    return result;
  }
  const std::optional<IpAddress> carried = CarriedV4(address);
  if (carried) {
    if (const GuardedRangeEntry* range = RangeOf(*carried)) {
      result.range = range->range;
      result.range_text = range->text;
      result.carried_v4 = carried;
      return result;
    }
  }
  if (IsHostAddress(address, host_addresses) ||
      (carried && IsHostAddress(*carried, host_addresses))) {
    result.range = GuardedRange::kThisHost;
    result.range_text = "an address of this host's own interfaces";
    if (carried && !IsHostAddress(address, host_addresses)) result.carried_v4 = carried;
    return result;
  }
  // The kernel's routes, the address itself first: "this host" is what it routes locally.
  const IpAddress unmapped = engine::UnmapV4(address);
  for (const bool own_form : {true, false}) {
    for (const RoutedAddress& routed : routes) {
      if ((routed.address == unmapped) != own_form) continue;
      if (!own_form && !(carried && routed.address == *carried)) continue;
      if (std::optional<std::pair<GuardedRange, absl::string_view>> found =
              RouteRange(routed.kind)) {
        result.range = found->first;
        result.range_text = found->second;
        if (!own_form) result.carried_v4 = carried;
        return result;
      }
    }
  }
  return result;
}

std::string ExactAddressEntry(const IpAddress& address) {
  const IpAddress named = engine::UnmapV4(address);
  return absl::StrCat(engine::FormatIpAddress(named), "/", named.bit_length());
}

std::optional<std::string> GuardNameDestination(const IpAddress& address,
                                                bool allowed_by_address_entry,
                                                absl::Span<const IpAddress> host_addresses,
                                                absl::Span<const RoutedAddress> routes) {
  if (allowed_by_address_entry) return std::nullopt;
  const Classification found = ClassifyDestination(address, host_addresses, routes);
  if (found.range == GuardedRange::kPublic) return std::nullopt;
  std::string reason = engine::FormatIpAddress(address);
  if (found.carried_v4) {
    absl::StrAppend(&reason, " carries ", engine::FormatIpAddress(*found.carried_v4), ", ",
                    found.range_text);
  } else {
    absl::StrAppend(&reason, " is ", found.range_text);
  }
  const std::string entry = ExactAddressEntry(address);
  absl::StrAppend(&reason,
                  ", where a name never leads on its own; an IP allow entry of this subject "
                  "allows it: add '",
                  entry, "' to its network.allow (leash net allow ", entry, ")");
  return reason;
}

}  // namespace leash::proxy
