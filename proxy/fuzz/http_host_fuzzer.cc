// Fuzz target: the HTTP/1.x host reader. Any input must be answered without a crash or hang;
// a host that is read never carries a port separator, userinfo, a path or whitespace.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "proxy/http_request_host.h"
#include "proxy/peek.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool final : {false, true}) {
    const leash::proxy::HttpRequestHostResult result =
        leash::proxy::ParseHttpRequestHost(bytes, final);
    if (result.state == leash::proxy::ParseState::kComplete && result.request.has_host) {
      for (char c : result.request.host) {
        if (c <= 0x20 || c >= 0x7f || c == '@' || c == '/') std::abort();
      }
    }
    if (final && result.state == leash::proxy::ParseState::kNeedMore) std::abort();
    leash::proxy::PeekDestinationName(bytes, final);
  }
  std::string host;
  leash::proxy::SplitAuthorityHost(bytes, &host);
  return 0;
}
