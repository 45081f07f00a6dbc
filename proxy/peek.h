// What the first bytes of a redirected connection say about where it is going, read without
// decryption: the TLS SNI or the HTTP host (docs/ARCHITECTURE.md, rule N4).
//
// The rules (each decided deliberately; proxy/peek_test.cc holds one case per rule):
// - a TLS ClientHello with one SNI host_name, or an HTTP/1.x request naming a host: kName;
// - a ClientHello without SNI, one offering ECH (its SNI names a client-facing server, not
//   the real one), an HTTP request with no host, bytes that are neither TLS nor HTTP/1.x
//   (SSH, HTTP/2 prior knowledge, anything opaque), or nothing at all by the peek deadline
//   (a server-speaks-first protocol): kNoName — the decision is made on the address alone,
//   which in whitelist mode only an address entry can allow;
// - a hello or request head that is broken, ambiguous (two SNIs, two Host headers, userinfo)
//   or larger than the bounds in peek_limits.h: kUnreadable — the connection said it carries a
//   name and the proxy could not read one, so it is refused under the subject's fail_mode.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace leash::proxy {

enum class PeekOutcome { kNeedMore, kName, kNoName, kUnreadable };

struct PeekResult {
  PeekOutcome outcome = PeekOutcome::kNeedMore;
  // kName: the host as sent (the engine normalizes case and a trailing dot, and treats an IP
  // literal as no name).
  std::string domain;
  // "TLS SNI", "HTTP Host header", ... (kName); why there is no name (kNoName); what could not
  // be read (kUnreadable). Used in the decision's reason.
  std::string detail;
};

// `bytes`: everything peeked so far. `final`: no more will come (peek deadline passed, or the
// client half-closed).
PeekResult PeekDestinationName(absl::string_view bytes, bool final);

}  // namespace leash::proxy
