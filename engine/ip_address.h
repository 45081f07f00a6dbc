// IPv4/IPv6 addresses and networks as plain values, for the network matcher and its grammar.
// Parsing is text only (inet_pton); nothing here touches the network.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace leash::engine {

struct IpAddress {
  enum class Family { kV4, kV6 };
  Family family = Family::kV4;
  // Network byte order. An IPv4 address uses the first 4 bytes.
  std::array<uint8_t, 16> bytes{};

  int bit_length() const { return family == Family::kV4 ? 32 : 128; }
  bool operator==(const IpAddress& other) const {
    return family == other.family && bytes == other.bytes;
  }
};

// Parses a dotted-quad IPv4 or an IPv6 address (no brackets, no zone). Returns nullopt if
// `text` is not exactly one address.
std::optional<IpAddress> ParseIpAddress(absl::string_view text);

// The canonical text form (inet_ntop).
std::string FormatIpAddress(const IpAddress& address);

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it carries; other
// addresses unchanged. A dual-stack socket reports IPv4 peers this way.
IpAddress UnmapV4(const IpAddress& address);

// Whether `address` is a loopback address: 127.0.0.0/8, ::1, or one of those IPv4-mapped.
bool IsLoopbackAddress(const IpAddress& address);

// `address` with every bit past `prefix_len` cleared.
IpAddress MaskAddress(const IpAddress& address, int prefix_len);

}  // namespace leash::engine
