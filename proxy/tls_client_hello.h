// Reads the server name (SNI) from the first bytes of a TLS connection without decrypting
// anything: the ClientHello is the one handshake message sent in the clear. The hello may
// arrive split across several TCP segments and several TLS records; the parser is handed
// every byte peeked so far and says whether it needs more.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "proxy/peek_limits.h"

namespace leash::proxy {

struct ClientHello {
  // The host_name entry of the server_name extension (RFC 6066), as sent (not normalized).
  bool has_server_name = false;
  std::string server_name;
  // The hello carries encrypted_client_hello (ECH, 0xfe0d): its server_name is the public
  // name of a client-facing server, not the server the client will talk to.
  bool has_ech = false;
};

struct ClientHelloResult {
  ParseState state = ParseState::kNeedMore;
  ClientHello hello;  // kComplete only
  std::string error;  // kMalformed / kTooLarge: what was wrong, for the decision's reason
};

// Parses `bytes`, everything the client has sent so far. `final`: no more bytes will come
// (the client half-closed or the peek timed out), so an incomplete hello is reported as
// kMalformed instead of kNeedMore. Never reads past `bytes`; any input is safe.
ClientHelloResult ParseClientHello(absl::string_view bytes, bool final = false);

}  // namespace leash::proxy
