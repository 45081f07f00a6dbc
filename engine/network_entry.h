// The network entry grammar: what may stand in network.allow / network.deny, and why an entry
// that may not can never match. A network entry is a host, an IP or a CIDR, optionally with
// :port (IPv6 in brackets when a port follows: [2001:db8::1]:443) — never a URL.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ip_address.h"

namespace leash::engine {

struct NetworkEntry {
  enum class Kind {
    kDomain,    // github.com: the name and every name under it (api.github.com).
    kWildcard,  // *.github.com: every name strictly under it, not github.com itself.
    kNetwork,   // 10.0.0.0/8, 192.0.2.7 (a /32), 2001:db8::/32.
  };
  Kind kind = Kind::kDomain;
  // kDomain / kWildcard: the lowercased name without "*." and without a trailing dot.
  std::string host;
  // kNetwork: the network address (host bits clear) and its prefix length.
  IpAddress network;
  int prefix_len = 0;
  // 0 means any port.
  uint16_t port = 0;
};

// Parses one entry. On an entry that can never match, returns InvalidArgument whose message
// is the reason, written for the operator ("a URL; write the host, e.g. github.com").
absl::StatusOr<NetworkEntry> ParseNetworkEntry(absl::string_view entry);

// Parses a DNS resolver entry (network.dns_resolvers): an IP address, which nft renders
// directly into the UDP exception. A name cannot be rendered, so it is inert.
absl::StatusOr<IpAddress> ParseResolverEntry(absl::string_view entry);

// Normalizes a host name as the matcher sees it: lowercase, one trailing dot dropped.
std::string NormalizeHost(absl::string_view host);

// Checks a domain name (no wildcard, no port). Returns the reason it is not one, or OK.
absl::Status CheckHostName(absl::string_view host);

}  // namespace leash::engine
