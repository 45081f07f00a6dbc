#include "proxy/peek.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "proxy/http_request_host.h"
#include "proxy/tls_client_hello.h"

namespace leash::proxy {
namespace {

PeekResult Make(PeekOutcome outcome, std::string detail, std::string domain = "") {
  PeekResult result;
  result.outcome = outcome;
  result.detail = std::move(detail);
  result.domain = std::move(domain);
  return result;
}

}  // namespace

PeekResult PeekDestinationName(absl::string_view bytes, bool final) {
  if (bytes.empty()) {
    return final ? Make(PeekOutcome::kNoName, "the client sent nothing first")
                 : Make(PeekOutcome::kNeedMore, "");
  }
  if (static_cast<uint8_t>(bytes[0]) == 0x16) {
    const ClientHelloResult tls = ParseClientHello(bytes, final);
    switch (tls.state) {
      case ParseState::kNeedMore:
        return Make(PeekOutcome::kNeedMore, "");
      case ParseState::kComplete:
        if (tls.hello.has_ech) {
          return Make(PeekOutcome::kNoName,
                      "TLS ClientHello offers ECH, so its SNI does not name the real server");
        }
        if (!tls.hello.has_server_name) return Make(PeekOutcome::kNoName, "TLS ClientHello without SNI");
        return Make(PeekOutcome::kName, "TLS SNI", tls.hello.server_name);
      case ParseState::kNotThisProtocol:
        return Make(PeekOutcome::kNoName, "neither TLS nor HTTP/1.x");
      case ParseState::kMalformed:
      case ParseState::kTooLarge:
        return Make(PeekOutcome::kUnreadable, tls.error);
    }
  }
  const HttpRequestHostResult http = ParseHttpRequestHost(bytes, final);
  switch (http.state) {
    case ParseState::kNeedMore:
      return Make(PeekOutcome::kNeedMore, "");
    case ParseState::kComplete:
      if (!http.request.has_host) return Make(PeekOutcome::kNoName, "HTTP request without a host");
      return Make(PeekOutcome::kName, absl::StrCat("HTTP ", http.request.source),
                  http.request.host);
    case ParseState::kNotThisProtocol:
      return Make(PeekOutcome::kNoName, "neither TLS nor HTTP/1.x");
    case ParseState::kMalformed:
    case ParseState::kTooLarge:
      return Make(PeekOutcome::kUnreadable, http.error);
  }
  return Make(PeekOutcome::kUnreadable, "unreachable");
}

}  // namespace leash::proxy
