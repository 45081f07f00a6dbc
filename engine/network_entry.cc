#include "engine/network_entry.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace leash::engine {
namespace {

absl::Status Inert(absl::string_view reason) {
  return absl::InvalidArgumentError(std::string(reason));
}

bool AllDigits(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::StatusOr<uint16_t> ParsePort(absl::string_view text) {
  uint32_t port = 0;
  if (!AllDigits(text) || text.size() > 5 || !absl::SimpleAtoi(text, &port)) {
    return Inert(absl::StrCat("port '", text, "' is not a number"));
  }
  if (port < 1 || port > 65535) {
    return Inert(absl::StrCat("port ", port, " is out of range (1-65535)"));
  }
  return static_cast<uint16_t>(port);
}

// Parses "<address>" or "<address>/<len>" into a network with host bits clear.
absl::StatusOr<NetworkEntry> ParseNetwork(absl::string_view text) {
  absl::string_view address_text = text;
  std::optional<absl::string_view> length_text;
  if (const size_t slash = text.find('/'); slash != absl::string_view::npos) {
    address_text = text.substr(0, slash);
    length_text = text.substr(slash + 1);
  }
  std::optional<IpAddress> address = ParseIpAddress(address_text);
  if (!address) return Inert(absl::StrCat("'", address_text, "' is not an IP address"));
  NetworkEntry entry;
  entry.kind = NetworkEntry::Kind::kNetwork;
  entry.prefix_len = address->bit_length();
  if (length_text) {
    int length = -1;
    if (!AllDigits(*length_text) || length_text->size() > 3 ||
        !absl::SimpleAtoi(*length_text, &length) || length > address->bit_length()) {
      return Inert(absl::StrCat("prefix length '/", *length_text, "' is not 0-",
                                address->bit_length()));
    }
    entry.prefix_len = length;
  }
  entry.network = MaskAddress(*address, entry.prefix_len);
  if (!(entry.network == *address)) {
    return Inert(absl::StrCat("host bits are set; the network is ",
                              FormatIpAddress(entry.network), "/", entry.prefix_len));
  }
  return entry;
}

}  // namespace

std::string NormalizeHost(absl::string_view host) {
  std::string normalized = absl::AsciiStrToLower(host);
  if (!normalized.empty() && normalized.back() == '.') normalized.pop_back();
  return normalized;
}

absl::Status CheckHostName(absl::string_view host) {
  if (host.empty()) return Inert("empty host name");
  if (host.size() > 253) return Inert("host name longer than 253 characters");
  if (host.front() == '.') {
    return Inert(absl::StrCat("leading '.'; write '", host.substr(1),
                              "', which already matches every name under it"));
  }
  for (char c : host) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      return Inert("non-ASCII name; write its ASCII (punycode, xn--) form");
    }
  }
  bool all_numeric = true;
  for (absl::string_view label : absl::StrSplit(host, '.')) {
    if (label.empty()) return Inert("empty label ('..') in host name");
    if (label.size() > 63) return Inert("a label longer than 63 characters");
    for (char c : label) {
      if (c == '*') return Inert("'*' is only allowed as a leading '*.' label");
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
        return Inert(absl::StrCat("character '", std::string(1, c), "' is not allowed in a host name"));
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return Inert(absl::StrCat("label '", label, "' starts or ends with '-'"));
    }
    all_numeric = all_numeric && AllDigits(label);
  }
  if (all_numeric) return Inert(absl::StrCat("'", host, "' is not a valid IPv4 address"));
  return absl::OkStatus();
}

absl::StatusOr<NetworkEntry> ParseNetworkEntry(absl::string_view entry) {
  if (entry.empty()) return Inert("empty entry");
  for (char c : entry) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '\0') {
      return Inert("contains whitespace");
    }
  }
  if (absl::StrContains(entry, "://")) {
    return Inert("a URL; a network entry is a host, IP or CIDR with an optional :port "
                 "(e.g. github.com or github.com:443)");
  }
  if (absl::StrContains(entry, '@')) {
    return Inert("contains '@' (user@host); write the host alone");
  }

  // [2001:db8::1], [2001:db8::/32], optionally followed by :port.
  if (entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == absl::string_view::npos) return Inert("'[' without a closing ']'");
    absl::string_view rest = entry.substr(close + 1);
    ASSIGN_OR_RETURN(NetworkEntry parsed, ParseNetwork(entry.substr(1, close - 1)));
    if (parsed.network.family != IpAddress::Family::kV6) {
      return Inert("brackets are for IPv6 addresses; write an IPv4 address without them");
    }
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Inert(absl::StrCat("unexpected '", rest, "' after ']'; only :port may follow"));
      }
      ASSIGN_OR_RETURN(parsed.port, ParsePort(rest.substr(1)));
    }
    return parsed;
  }

  // Two or more colons without brackets: a bare IPv6 address or network, which cannot carry
  // a port (the last group would be ambiguous).
  if (std::count(entry.begin(), entry.end(), ':') >= 2) {
    absl::StatusOr<NetworkEntry> parsed = ParseNetwork(entry);
    if (!parsed.ok()) {
      return Inert(absl::StrCat(parsed.status().message(),
                                "; an IPv6 entry with a port is written [2001:db8::1]:443"));
    }
    return parsed;
  }

  absl::string_view host = entry;
  uint16_t port = 0;
  if (const size_t colon = entry.rfind(':'); colon != absl::string_view::npos) {
    host = entry.substr(0, colon);
    ASSIGN_OR_RETURN(port, ParsePort(entry.substr(colon + 1)));
  }
  if (host.empty()) return Inert("no host before ':port'");

  if (const size_t slash = host.find('/'); slash != absl::string_view::npos) {
    if (!ParseIpAddress(host.substr(0, slash))) {
      return Inert(absl::StrCat("contains a path ('", host.substr(slash),
                                "'); a network entry is a host, not a URL"));
    }
    ASSIGN_OR_RETURN(NetworkEntry parsed, ParseNetwork(host));
    parsed.port = port;
    return parsed;
  }
  if (ParseIpAddress(host)) {
    ASSIGN_OR_RETURN(NetworkEntry parsed, ParseNetwork(host));
    parsed.port = port;
    return parsed;
  }

  NetworkEntry parsed;
  parsed.port = port;
  if (absl::StartsWith(host, "*.")) {
    parsed.kind = NetworkEntry::Kind::kWildcard;
    host.remove_prefix(2);
  } else if (host == "*") {
    return Inert("a bare '*' would match every host; use mode: blacklist to allow by default");
  }
  if (host.size() > 1 && host.back() == '.') host.remove_suffix(1);  // github.com. is github.com
  RETURN_IF_ERROR(CheckHostName(host));
  parsed.host = NormalizeHost(host);
  return parsed;
}

absl::StatusOr<IpAddress> ParseResolverEntry(absl::string_view entry) {
  std::optional<IpAddress> address = ParseIpAddress(entry);
  if (!address) {
    return Inert(absl::StrCat("'", entry,
                              "' is not an IP address; nft renders a resolver as an address, "
                              "so write the resolver's IP"));
  }
  return *address;
}

}  // namespace leash::engine
