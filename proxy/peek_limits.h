// The bounds every first-bytes parser shares, and the state a parser reports. The proxy peeks
// (MSG_PEEK) at most kMaxPeekBytes of a new connection; a name that does not fit is refused
// rather than waited for, so a client cannot make the proxy hold unbounded bytes.
#pragma once

#include <cstddef>

namespace leash::proxy {

// The largest TLS handshake message (ClientHello) read. Hellos with post-quantum key shares
// are about 1.8 KB; 16 KiB is the TLS record limit and leaves room for many extensions.
inline constexpr size_t kMaxClientHelloBytes = 16384;
// Everything peeked before a name must be readable: a ClientHello of kMaxClientHelloBytes
// split into records, or an HTTP request line and headers.
inline constexpr size_t kMaxPeekBytes = 17408;

enum class ParseState {
  kNeedMore,         // a prefix of a valid message: wait for more bytes
  kComplete,         // the message was read
  kNotThisProtocol,  // these bytes are not this protocol
  kMalformed,        // this protocol, but broken or ambiguous (the error says how)
  kTooLarge,         // this protocol, but longer than the bounds above
};

}  // namespace leash::proxy
