// Fuzz target: the DNS message parser and the replies built from what it parsed. Any input must
// be answered without a crash or hang; a parsed name never holds a byte a host name cannot
// (those are escaped), and every reply is a message the parser reads back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "proxy/dns_message.h"

namespace dns = leash::proxy::dns;

namespace {

void CheckName(const std::string& name) {
  if (name.size() > 4 * 255) std::abort();
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dns::Message> message = dns::ParseMessage(bytes);
  if (!message.ok()) {
    const std::string reply = dns::BuildHeaderOnlyReply(bytes, dns::Rcode::kFormErr);
    if (!dns::ParseMessage(reply).ok()) std::abort();
    return 0;
  }
  for (const dns::Question& question : message->questions) CheckName(question.name);
  for (const dns::Record& record : message->answers) {
    CheckName(record.name);
    CheckName(record.target);
  }
  if (message->question_end > bytes.size()) std::abort();
  absl::StatusOr<dns::Message> reply =
      dns::ParseMessage(dns::BuildReply(bytes, *message, dns::Rcode::kNxDomain));
  // The question section is echoed as it came, so the reply answers the message it was built
  // for.
  if (!reply.ok() || !dns::AnswersQuery(*message, *reply)) std::abort();
  absl::StatusOr<dns::Message> truncated = dns::ParseMessage(dns::Truncate(bytes, *message));
  if (!truncated.ok() || !truncated->header.truncated() || !truncated->answers.empty()) {
    std::abort();
  }
  dns::AddressesFor(*message);
  return 0;
}
