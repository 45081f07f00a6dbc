// Reads the destination host named by the first bytes of a plain-HTTP/1.x connection: the
// authority of an absolute-form (or CONNECT authority-form) request target if there is one,
// else the Host header (RFC 9112 3.2: a server ignores Host when the target is absolute).
// The port in either is dropped: the decision uses the port the client really connected to.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "proxy/peek_limits.h"

namespace leash::proxy {

struct HttpRequestHost {
  // False for a request with no host at all (HTTP/1.0 without Host, an empty Host).
  bool has_host = false;
  // As sent, without port or IPv6 brackets (not normalized).
  std::string host;
  // "absolute-form", "authority-form" or "Host header": where `host` came from.
  std::string source;
};

struct HttpRequestHostResult {
  ParseState state = ParseState::kNeedMore;
  HttpRequestHost request;  // kComplete only
  std::string error;        // kMalformed / kTooLarge
};

// Parses `bytes`, everything the client has sent so far, up to the end of the request head.
// Bytes that do not start an HTTP/1.x request line are kNotThisProtocol. Ambiguity — two Host
// headers, userinfo in the authority, a header folded over lines — is kMalformed: an upstream
// might read the request differently from the proxy. `final`: no more bytes will come.
HttpRequestHostResult ParseHttpRequestHost(absl::string_view bytes, bool final = false);

// Splits "host", "host:port", "[v6]", "[v6]:port" into the host; false when it is none of them.
bool SplitAuthorityHost(absl::string_view authority, std::string* host);

}  // namespace leash::proxy
