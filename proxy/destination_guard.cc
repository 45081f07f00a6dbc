#include "proxy/destination_guard.h"

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace leash::proxy {
namespace {

using engine::IpAddress;

struct Range {
  IpAddress network;
  int prefix_len;
  GuardedRange range;
  absl::string_view text;
};

IpAddress Parse(absl::string_view text) { return *engine::ParseIpAddress(text); }

// Most specific first where ranges nest (the metadata address inside link-local).
const std::vector<Range>& Ranges() {
  static const std::vector<Range>* const ranges = new std::vector<Range>{
      {Parse("169.254.169.254"), 32, GuardedRange::kMetadata, "the cloud metadata address"},
      {Parse("fd00:ec2::254"), 128, GuardedRange::kMetadata, "the cloud metadata address"},
      {Parse("0.0.0.0"), 8, GuardedRange::kUnspecified, "in unspecified 0.0.0.0/8"},
      {Parse("::"), 128, GuardedRange::kUnspecified, "the unspecified address ::"},
      {Parse("127.0.0.0"), 8, GuardedRange::kLoopback, "in loopback 127.0.0.0/8"},
      {Parse("::1"), 128, GuardedRange::kLoopback, "the loopback address ::1"},
      {Parse("169.254.0.0"), 16, GuardedRange::kLinkLocal, "in link-local 169.254.0.0/16"},
      {Parse("fe80::"), 10, GuardedRange::kLinkLocal, "in link-local fe80::/10"},
      {Parse("10.0.0.0"), 8, GuardedRange::kPrivate, "in private 10.0.0.0/8"},
      {Parse("172.16.0.0"), 12, GuardedRange::kPrivate, "in private 172.16.0.0/12"},
      {Parse("192.168.0.0"), 16, GuardedRange::kPrivate, "in private 192.168.0.0/16"},
      {Parse("fc00::"), 7, GuardedRange::kPrivate, "in unique-local fc00::/7"},
      {Parse("fec0::"), 10, GuardedRange::kPrivate, "in site-local fec0::/10"},
      // Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the local prefix
      // length, so the whole range is treated as the site's own.
      {Parse("64:ff9b:1::"), 48, GuardedRange::kPrivate, "in local-use NAT64 64:ff9b:1::/48"},
      {Parse("100.64.0.0"), 10, GuardedRange::kSharedSpace,
       "in shared (carrier-grade NAT) 100.64.0.0/10"},
      {Parse("224.0.0.0"), 4, GuardedRange::kMulticast, "in multicast 224.0.0.0/4"},
      {Parse("ff00::"), 8, GuardedRange::kMulticast, "in multicast ff00::/8"},
      {Parse("240.0.0.0"), 4, GuardedRange::kReserved,
       "in reserved 240.0.0.0/4 (with the broadcast address 255.255.255.255)"},
      {Parse("192.0.0.0"), 24, GuardedRange::kReserved,
       "in IETF protocol assignments 192.0.0.0/24"},
  };
  return *ranges;
}

const Range* RangeOf(const IpAddress& address) {
  for (const Range& range : Ranges()) {
    if (range.network.family == address.family &&
        engine::MaskAddress(address, range.prefix_len) == range.network) {
      return &range;
    }
  }
  return nullptr;
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

}  // namespace

Classification ClassifyDestination(const IpAddress& address,
                                   absl::Span<const IpAddress> host_addresses) {
  Classification result;
  if (const Range* range = RangeOf(address)) {
    result.range = range->range;
    result.range_text = range->text;
    return result;
  }
  const std::optional<IpAddress> carried = CarriedV4(address);
  if (carried) {
    if (const Range* range = RangeOf(*carried)) {
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
  }
  return result;
}

std::string ExactAddressEntry(const IpAddress& address) {
  const IpAddress named = engine::UnmapV4(address);
  return absl::StrCat(engine::FormatIpAddress(named), "/", named.bit_length());
}

std::optional<std::string> GuardNameDestination(const IpAddress& address,
                                                bool allowed_by_address_entry,
                                                absl::Span<const IpAddress> host_addresses) {
  if (allowed_by_address_entry) return std::nullopt;
  const Classification found = ClassifyDestination(address, host_addresses);
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
