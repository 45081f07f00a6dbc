#include "engine/check_subject.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace leash::engine {

absl::StatusOr<NetworkSubject> ParseNetworkCheckSubject(absl::string_view text) {
  const absl::Status usage = absl::InvalidArgumentError(
      absl::StrCat("network subject '", text,
                   "' must be host:port, ip:port or [v6]:port (e.g. github.com:443)"));
  absl::string_view host;
  absl::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("]:");
    if (close == absl::string_view::npos) return usage;
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos || text.find(':') != colon) return usage;
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  uint32_t port = 0;
  if (host.empty() || !absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return usage;
  }
  NetworkSubject subject;
  subject.port = static_cast<uint16_t>(port);
  if (std::optional<IpAddress> ip = ParseIpAddress(host)) {
    subject.ip = ip;
  } else {
    subject.domain = std::string(host);
  }
  return subject;
}

absl::StatusOr<Decision> DecideText(const CompiledPolicy& policy, Surface surface,
                                    absl::string_view subject) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK: {
      ASSIGN_OR_RETURN(NetworkSubject parsed, ParseNetworkCheckSubject(subject));
      return policy.DecideNetwork(parsed);
    }
    case leash::v1::SURFACE_FILESYSTEM:
      if (subject.empty() || subject.front() != '/') {
        return absl::InvalidArgumentError(
            absl::StrCat("filesystem subject '", subject, "' must be an absolute path"));
      }
      return policy.DecidePath(subject);
    case leash::v1::SURFACE_COMMANDS:
      if (subject.empty() || (subject.front() != '/' && subject.find('/') != subject.npos)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "commands subject '", subject, "' must be an absolute path or a binary name"));
      }
      return policy.DecideCommand(subject);
    case leash::v1::SURFACE_TOOLS:
      if (subject.empty()) return absl::InvalidArgumentError("tools subject must be a tool name");
      return policy.DecideTool(subject);
    default:
      return absl::InvalidArgumentError("unknown surface");
  }
}

}  // namespace leash::engine
