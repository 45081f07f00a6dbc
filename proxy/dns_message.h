// DNS messages (RFC 1035, EDNS0 from RFC 6891) as the DNS filter reads them: the header, the
// question section, and the records of the other sections with their names decompressed. The
// bytes are untrusted (an agent's query, or a resolver's answer to one), so every length and
// count is checked against the message, a compression pointer must point strictly backwards
// (no loop can form), and a name is at most 255 bytes of wire form. Pure: no syscalls.
//
// A name comes back as text, lowercase, without the trailing dot ("" for the root). A byte of a
// label that a host name cannot hold (anything but letters, digits, '-' and '_') is written as
// \DDD and a '.' inside a label as "\.", so the text never reads as a different name than the
// wire says, and such a name never matches a policy entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ip_address.h"

namespace leash::proxy::dns {

inline constexpr size_t kHeaderBytes = 12;
// The largest DNS message over TCP (a 16-bit length prefix) and the largest datagram read.
inline constexpr size_t kMaxMessageBytes = 65535;
// Without EDNS0 a UDP answer may be at most this long (RFC 1035 4.2.1).
inline constexpr uint16_t kClassicUdpBytes = 512;

inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeCname = 5;
inline constexpr uint16_t kTypeTxt = 16;
inline constexpr uint16_t kTypeAaaa = 28;
inline constexpr uint16_t kTypeOpt = 41;
inline constexpr uint16_t kClassIn = 1;

enum class Rcode : uint8_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

struct Header {
  uint16_t id = 0;
  uint16_t flags = 0;
  uint16_t question_count = 0;
  uint16_t answer_count = 0;
  uint16_t authority_count = 0;
  uint16_t additional_count = 0;

  bool response() const { return (flags & 0x8000) != 0; }
  uint8_t opcode() const { return static_cast<uint8_t>((flags >> 11) & 0xF); }
  bool truncated() const { return (flags & 0x0200) != 0; }
  uint8_t rcode() const { return static_cast<uint8_t>(flags & 0xF); }
};

struct Question {
  std::string name;
  uint16_t type = 0;
  uint16_t klass = 0;
};

struct Record {
  std::string name;
  uint16_t type = 0;
  uint16_t klass = 0;
  uint32_t ttl = 0;
  // A, AAAA: the address; CNAME: the target name (decompressed). Other types: neither.
  std::optional<engine::IpAddress> address;
  std::string target;
};

struct Message {
  Header header;
  std::vector<Question> questions;
  std::vector<Record> answers;  // the answer section only
  // Where the question section ends: a reply echoes bytes [kHeaderBytes, question_end).
  size_t question_end = kHeaderBytes;
  // The OPT record's UDP payload size, when the message carries EDNS0.
  std::optional<uint16_t> edns_udp_size;
};

// The first 12 bytes. InvalidArgument when there are fewer.
absl::StatusOr<Header> ParseHeader(absl::string_view bytes);

// Every section of `bytes`, checked: InvalidArgument names what is malformed (a name running
// past the end, a pointer that does not point backwards, a label over 63 or a name over 255
// bytes, a record whose data runs past the end, an A/AAAA/CNAME whose data is not one, a
// second OPT record or one not at the root, bytes left over after the last record).
absl::StatusOr<Message> ParseMessage(absl::string_view bytes);

// A reply to `query` carrying no records: the query's id, opcode and RD bit, QR and RA set,
// `rcode`, and the question section echoed (`query.question_end` bytes of `query_bytes`).
std::string BuildReply(absl::string_view query_bytes, const Message& query, Rcode rcode);

// A reply to a query that could not be parsed: its id (from the first two bytes, when there
// are two) and `rcode`, no question section.
std::string BuildHeaderOnlyReply(absl::string_view query_bytes, Rcode rcode);

// `answer` cut to its header and question section, with TC set and no records (RFC 2181 9):
// what a UDP client gets when the whole answer is longer than it can take. `message` is
// `answer` parsed.
std::string Truncate(absl::string_view answer, const Message& message);

// Whether `answer` answers `query`: a response, the same id, and the same question section
// (names compared case-insensitively, as the parsed text is lowercase).
bool AnswersQuery(const Message& query, const Message& answer);

// The addresses an answer gives for its first question's name: the A and AAAA records of that
// name and of the names its CNAME records lead to within the answer section, and the smallest
// TTL among the records used (no addresses: an answer with none for that name).
struct AnswerAddresses {
  std::vector<engine::IpAddress> addresses;
  uint32_t ttl = 0;
};
AnswerAddresses AddressesFor(const Message& answer);

}  // namespace leash::proxy::dns
