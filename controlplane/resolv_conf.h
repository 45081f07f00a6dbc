// The host's resolvers from /etc/resolv.conf: the one UDP exception a leashed UID keeps ("DNS
// to the host's own resolvers ... because nothing resolves without it") when its policy names
// no network.dns_resolvers of its own.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ip_address.h"

namespace leash::controlplane {

// The `nameserver` addresses in resolv.conf text, in order; lines that are not an address
// (comments, options, a scoped address) are skipped.
std::vector<engine::IpAddress> ParseResolvConf(absl::string_view text);

// Reads and parses `path` (default /etc/resolv.conf). A missing file is no resolvers.
absl::StatusOr<std::vector<engine::IpAddress>> HostResolvers(
    const std::string& path = "/etc/resolv.conf");

}  // namespace leash::controlplane
