// Fuzz target: the operator's --ack tokens and scopes. Any input is parsed or refused; a
// token that parses renders back to exactly the input (acks are matched exactly), and a
// refused scope never crashes the display-name search.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/loosening.h"
#include "engine/scope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (absl::StatusOr<leash::engine::AckToken> token = leash::engine::ParseAckToken(text);
      token.ok() && token->ToString() != text) {
    std::abort();
  }
  if (absl::StatusOr<leash::engine::AgentAck> ack = leash::engine::ParseAgentAck(text);
      ack.ok() && "agent:" + ack->account + "=" + ack->token != text) {
    std::abort();
  }
  if (absl::StatusOr<leash::engine::Scope> scope = leash::engine::ParseScope(text);
      scope.ok() && scope->ToString() != text) {
    std::abort();
  }
  leash::engine::CheckScopeForWrite(text, {"leash-iris", "leash-iris-2", "fido"}, "fido");
  return 0;
}
