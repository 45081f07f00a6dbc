#include "engine/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace leash::engine {

std::optional<IpAddress> ParseIpAddress(absl::string_view text) {
  // inet_pton needs a NUL-terminated string; anything longer than an IPv6 text form is not one.
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buffer[INET6_ADDRSTRLEN];
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  IpAddress address;
  if (inet_pton(AF_INET, buffer, address.bytes.data()) == 1) {
    address.family = IpAddress::Family::kV4;
    return address;
  }
  if (inet_pton(AF_INET6, buffer, address.bytes.data()) == 1) {
    address.family = IpAddress::Family::kV6;
    return address;
  }
  return std::nullopt;
}

std::string FormatIpAddress(const IpAddress& address) {
  char buffer[INET6_ADDRSTRLEN] = {};
  const int family = address.family == IpAddress::Family::kV4 ? AF_INET : AF_INET6;
  if (inet_ntop(family, address.bytes.data(), buffer, sizeof(buffer)) == nullptr) return "?";
  return buffer;
}

IpAddress UnmapV4(const IpAddress& address) {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (address.family != IpAddress::Family::kV6 ||
      std::memcmp(address.bytes.data(), kMappedPrefix, sizeof(kMappedPrefix)) != 0) {
    return address;
  }
  IpAddress v4;
  v4.family = IpAddress::Family::kV4;
  std::memcpy(v4.bytes.data(), address.bytes.data() + 12, 4);
  return v4;
}

bool IsLoopbackAddress(const IpAddress& address) {
  const IpAddress ip = UnmapV4(address);
  if (ip.family == IpAddress::Family::kV4) return ip.bytes[0] == 127;
  for (int i = 0; i < 15; ++i) {
    if (ip.bytes[i] != 0) return false;
  }
  return ip.bytes[15] == 1;
}

IpAddress MaskAddress(const IpAddress& address, int prefix_len) {
  IpAddress masked = address;
  const int bytes = address.bit_length() / 8;
  for (int i = 0; i < bytes; ++i) {
    const int bits_here = prefix_len - i * 8;
    if (bits_here >= 8) continue;
    masked.bytes[i] &= bits_here <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits_here));
  }
  return masked;
}

}  // namespace leash::engine
