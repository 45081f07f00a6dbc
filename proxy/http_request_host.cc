#include "proxy/http_request_host.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leash::proxy {
namespace {

// Methods are short; a longer token is some other protocol's bytes.
constexpr size_t kMaxMethod = 24;

bool IsTchar(char c) {
  // RFC 9110 5.6.2 token characters.
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

bool IsVisible(char c) { return c > 0x20 && c < 0x7f; }

HttpRequestHostResult Result(ParseState state, std::string error = "") {
  HttpRequestHostResult result;
  result.state = state;
  result.error = std::move(error);
  return result;
}

// The next line (without its CRLF or bare LF) starting at *pos; false if not complete yet.
bool NextLine(absl::string_view bytes, size_t* pos, absl::string_view* line) {
  const size_t lf = bytes.find('\n', *pos);
  if (lf == absl::string_view::npos) return false;
  size_t end = lf;
  if (end > *pos && bytes[end - 1] == '\r') --end;
  *line = bytes.substr(*pos, end - *pos);
  *pos = lf + 1;
  return true;
}

}  // namespace

bool SplitAuthorityHost(absl::string_view authority, std::string* host) {
  absl::string_view port;
  if (absl::StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return false;
    *host = std::string(authority.substr(1, close - 1));
    absl::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port = rest.substr(1);
    }
    if (host->empty()) return false;
  } else {
    const size_t colon = authority.rfind(':');
    absl::string_view name = authority;
    if (colon != absl::string_view::npos) {
      name = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      // An unbracketed IPv6 literal has more colons: not a valid authority.
      if (name.find(':') != absl::string_view::npos) return false;
    }
    *host = std::string(name);
  }
  if (port.size() > 5) return false;
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  for (char c : *host) {
    if (!IsVisible(c) || c == '@' || c == '/' || c == '?' || c == '#') return false;
  }
  return true;
}

HttpRequestHostResult ParseHttpRequestHost(absl::string_view bytes, bool final) {
  // The method: a token, then one space. Decided byte by byte so an opaque protocol is let go
  // as soon as it shows a byte no request line could hold.
  size_t method_end = 0;
  while (method_end < bytes.size() && IsTchar(bytes[method_end])) ++method_end;
  if (method_end > kMaxMethod) return Result(ParseState::kNotThisProtocol);
  if (method_end == bytes.size()) {
    return Result(final ? ParseState::kNotThisProtocol : ParseState::kNeedMore);
  }
  if (method_end == 0 || bytes[method_end] != ' ') return Result(ParseState::kNotThisProtocol);
  const absl::string_view method = bytes.substr(0, method_end);

  // The request line: METHOD SP target SP HTTP/1.x. Until it is whole, a byte that cannot be
  // in it ends the HTTP reading.
  size_t pos = 0;
  absl::string_view line;
  if (!NextLine(bytes, &pos, &line)) {
    for (size_t i = method_end + 1; i < bytes.size(); ++i) {
      if (!IsVisible(bytes[i]) && bytes[i] != ' ' && bytes[i] != '\r') {
        return Result(ParseState::kNotThisProtocol);
      }
    }
    if (bytes.size() >= kMaxPeekBytes) {
      return Result(ParseState::kTooLarge,
                    absl::StrCat("HTTP request line longer than ", kMaxPeekBytes, " bytes"));
    }
    return Result(final ? ParseState::kNotThisProtocol : ParseState::kNeedMore);
  }
  absl::string_view rest = line.substr(method_end + 1);
  const size_t space = rest.find(' ');
  if (space == absl::string_view::npos) return Result(ParseState::kNotThisProtocol);
  const absl::string_view target = rest.substr(0, space);
  const absl::string_view version = rest.substr(space + 1);
  if (version.size() != 8 || !absl::StartsWith(version, "HTTP/1.") ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[7]))) {
    // HTTP/0.9, HTTP/2 prior knowledge ("PRI * HTTP/2.0") or some other protocol.
    return Result(ParseState::kNotThisProtocol);
  }
  for (char c : target) {
    if (!IsVisible(c)) return Result(ParseState::kMalformed, "HTTP request target is not visible ASCII");
  }
  if (target.empty()) return Result(ParseState::kMalformed, "HTTP request target is empty");

  // From here it is HTTP/1.x: trouble is kMalformed, not someone else's protocol.
  HttpRequestHostResult result;
  result.state = ParseState::kComplete;
  HttpRequestHost& request = result.request;
  if (method == "CONNECT") {
    if (!SplitAuthorityHost(target, &request.host)) {
      return Result(ParseState::kMalformed,
                    absl::StrCat("CONNECT target '", target, "' is not host:port"));
    }
    request.has_host = true;
    request.source = "authority-form";
  } else if (target[0] != '/' && target != "*") {
    const size_t scheme_end = target.find("://");
    if (scheme_end == absl::string_view::npos || scheme_end == 0) {
      return Result(ParseState::kMalformed,
                    absl::StrCat("HTTP request target '", target, "' is not a path or a URL"));
    }
    absl::string_view authority = target.substr(scheme_end + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (authority.find('@') != absl::string_view::npos) {
      // RFC 9110 4.2.4: userinfo in an http(s) URI is an error; "allowed.com@other.com" reads
      // as two different hosts to two different parsers.
      return Result(ParseState::kMalformed, "HTTP request target carries userinfo ('@')");
    }
    if (!authority.empty()) {
      if (!SplitAuthorityHost(authority, &request.host)) {
        return Result(ParseState::kMalformed,
                      absl::StrCat("HTTP request target authority '", authority, "' is not a host"));
      }
      request.has_host = true;
      request.source = "absolute-form";
    }
  }

  bool saw_host = false;
  std::string header_host;
  while (true) {
    if (!NextLine(bytes, &pos, &line)) {
      if (bytes.size() >= kMaxPeekBytes) {
        return Result(ParseState::kTooLarge,
                      absl::StrCat("HTTP request head longer than ", kMaxPeekBytes, " bytes"));
      }
      if (final) {
        return Result(ParseState::kMalformed,
                      absl::StrCat("HTTP request head incomplete after ", bytes.size(), " bytes"));
      }
      return Result(ParseState::kNeedMore);
    }
    if (pos > kMaxPeekBytes) {
      // The proxy never peeks further; the answer must not depend on how much was handed in.
      return Result(ParseState::kTooLarge,
                    absl::StrCat("HTTP request head longer than ", kMaxPeekBytes, " bytes"));
    }
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') {
      return Result(ParseState::kMalformed, "HTTP header folded over lines (obs-fold)");
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || colon == 0) {
      return Result(ParseState::kMalformed, "HTTP header line without a field name");
    }
    const absl::string_view name = line.substr(0, colon);
    for (char c : name) {
      // Includes whitespace before the colon, which RFC 9112 5.1 requires rejecting.
      if (!IsTchar(c)) return Result(ParseState::kMalformed, "HTTP header name is not a token");
    }
    if (!absl::EqualsIgnoreCase(name, "host")) continue;
    if (saw_host) return Result(ParseState::kMalformed, "HTTP request has more than one Host header");
    saw_host = true;
    const absl::string_view value =
        absl::StripTrailingAsciiWhitespace(absl::StripLeadingAsciiWhitespace(line.substr(colon + 1)));
    if (!value.empty() && !SplitAuthorityHost(value, &header_host)) {
      return Result(ParseState::kMalformed, absl::StrCat("Host header '", value, "' is not a host"));
    }
  }
  if (!request.has_host && !header_host.empty()) {
    request.has_host = true;
    request.host = header_host;
    request.source = "Host header";
  }
  return result;
}

}  // namespace leash::proxy
