// Fuzz target: the TLS ClientHello parser and the peek that classifies a connection's first
// bytes. Any input must be answered — never a crash, a hang or a read past the input — and a
// name that is read must be printable ASCII of at most 255 bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "proxy/peek.h"
#include "proxy/tls_client_hello.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool final : {false, true}) {
    const leash::proxy::ClientHelloResult result = leash::proxy::ParseClientHello(bytes, final);
    if (result.state == leash::proxy::ParseState::kComplete && result.hello.has_server_name) {
      const std::string& name = result.hello.server_name;
      if (name.empty() || name.size() > 255) std::abort();
      for (char c : name) {
        if (c <= 0x20 || c >= 0x7f) std::abort();
      }
    }
    if (final && result.state == leash::proxy::ParseState::kNeedMore) std::abort();
    const leash::proxy::PeekResult peek = leash::proxy::PeekDestinationName(bytes, final);
    if (final && peek.outcome == leash::proxy::PeekOutcome::kNeedMore) std::abort();
  }
  return 0;
}
