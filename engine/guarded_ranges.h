// The address ranges where a name never leads on its own: the proxy's destination guard
// (proxy/destination_guard.h) refuses a name that resolves into one unless an IP/CIDR allow
// entry names the address, and `leash validate` says which of them an allow entry opens.
// Pure data and lookups: no syscalls.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/ip_address.h"

namespace leash::engine {

// Why a name may not lead to an address on its own.
enum class GuardedRange : uint8_t {
  kPublic,       // none: a name may lead here
  kUnspecified,  // 0.0.0.0/8, ::
  kLoopback,     // 127.0.0.0/8, ::1
  kMetadata,     // a cloud's instance-metadata or platform address (169.254.169.254, ...)
  kLinkLocal,    // 169.254.0.0/16, fe80::/10
  kPrivate,      // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10, 64:ff9b:1::/48
  kSharedSpace,  // 100.64.0.0/10 (carrier-grade NAT)
  kMulticast,    // 224.0.0.0/4, ff00::/8
  kReserved,     // 240.0.0.0/4 and 255.255.255.255, 192.0.0.0/24
  kThisHost,     // this host's own: an interface address, or routed locally by the kernel
};

struct GuardedRangeEntry {
  IpAddress network;
  int prefix_len = 0;
  GuardedRange range = GuardedRange::kPublic;
  // As written for an operator after "is" ("the cloud metadata address", "in private
  // 10.0.0.0/8").
  absl::string_view text;
};

// Every range, most specific first where ranges nest (a metadata address before the
// link-local or shared range that holds it).
absl::Span<const GuardedRangeEntry> GuardedRanges();

// The most specific range holding `address` (compared in its own family: an IPv4-mapped
// address is not unwrapped here), or nullptr.
const GuardedRangeEntry* GuardedRangeOf(const IpAddress& address);

}  // namespace leash::engine
