#include "proxy/dns_message.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace leash::proxy::dns {
namespace {

constexpr size_t kMaxNameWireBytes = 255;
constexpr uint16_t kFlagResponse = 0x8000;
constexpr uint16_t kFlagTruncated = 0x0200;
constexpr uint16_t kFlagRecursionDesired = 0x0100;
constexpr uint16_t kFlagRecursionAvailable = 0x0080;
constexpr uint16_t kOpcodeMask = 0x7800;

uint16_t Read16(absl::string_view bytes, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(bytes[at]) << 8) |
                               static_cast<uint8_t>(bytes[at + 1]));
}

uint32_t Read32(absl::string_view bytes, size_t at) {
  return (static_cast<uint32_t>(Read16(bytes, at)) << 16) | Read16(bytes, at + 2);
}

void Put16(std::string& out, size_t at, uint16_t value) {
  out[at] = static_cast<char>(value >> 8);
  out[at + 1] = static_cast<char>(value & 0xFF);
}

absl::Status Malformed(absl::string_view what, size_t at) {
  return absl::InvalidArgumentError(absl::StrCat("malformed DNS message: ", what, " at byte ", at));
}

bool HostNameByte(unsigned char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '_';
}

// Reads the name at `*at`, following compression pointers; `*at` moves past the name's bytes
// in place (a pointer ends them). Each pointer must point before the label it stands in, so
// the walk visits strictly decreasing offsets and ends.
absl::StatusOr<std::string> ReadName(absl::string_view bytes, size_t* at) {
  std::string text;
  size_t pos = *at;
  size_t wire_length = 0;
  bool jumped = false;
  // The lowest offset reached so far: every pointer must go below it.
  size_t floor = pos;
  while (true) {
    if (pos >= bytes.size()) return Malformed("name runs past the end", pos);
    const uint8_t length = static_cast<uint8_t>(bytes[pos]);
    if ((length & 0xC0) == 0xC0) {
      if (pos + 1 >= bytes.size()) return Malformed("compression pointer cut short", pos);
      const size_t target = Read16(bytes, pos) & 0x3FFF;
      if (target >= floor) return Malformed("compression pointer that does not point back", pos);
      if (!jumped) *at = pos + 2;
      jumped = true;
      floor = target;
      pos = target;
      continue;
    }
    // 0x40 and 0x80 are not labels a query or an answer uses; a length is at most 63.
    if ((length & 0xC0) != 0) return Malformed("label type other than a length or a pointer", pos);
    wire_length += 1 + length;
    if (wire_length > kMaxNameWireBytes) return Malformed("name longer than 255 bytes", pos);
    if (length == 0) {
      if (!jumped) *at = pos + 1;
      return text;
    }
    if (pos + 1 + length > bytes.size()) return Malformed("label runs past the end", pos);
    if (!text.empty()) text += '.';
    for (size_t i = pos + 1; i <= pos + length; ++i) {
      const unsigned char c = static_cast<unsigned char>(bytes[i]);
      if (HostNameByte(c)) {
        text += static_cast<char>(absl::ascii_tolower(c));
      } else if (c == '.') {
        text += "\\.";
      } else {
        absl::StrAppendFormat(&text, "\\%03d", c);
      }
    }
    pos += 1 + length;
  }
}

}  // namespace

absl::StatusOr<Header> ParseHeader(absl::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("DNS message of ", bytes.size(),
                                                   " bytes is shorter than its 12-byte header"));
  }
  Header header;
  header.id = Read16(bytes, 0);
  header.flags = Read16(bytes, 2);
  header.question_count = Read16(bytes, 4);
  header.answer_count = Read16(bytes, 6);
  header.authority_count = Read16(bytes, 8);
  header.additional_count = Read16(bytes, 10);
  return header;
}

absl::StatusOr<Message> ParseMessage(absl::string_view bytes) {
  if (bytes.size() > kMaxMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("DNS message of ", bytes.size(), " bytes is longer than 65535"));
  }
  absl::StatusOr<Header> header = ParseHeader(bytes);
  if (!header.ok()) return header.status();
  Message message;
  message.header = *header;
  size_t at = kHeaderBytes;
  for (uint16_t i = 0; i < header->question_count; ++i) {
    absl::StatusOr<std::string> name = ReadName(bytes, &at);
    if (!name.ok()) return name.status();
    if (at + 4 > bytes.size()) return Malformed("question cut short", at);
    Question question;
    question.name = *std::move(name);
    question.type = Read16(bytes, at);
    question.klass = Read16(bytes, at + 2);
    at += 4;
    message.questions.push_back(std::move(question));
  }
  message.question_end = at;
  const uint32_t records = static_cast<uint32_t>(header->answer_count) + header->authority_count +
                           header->additional_count;
  for (uint32_t i = 0; i < records; ++i) {
    const size_t record_start = at;
    absl::StatusOr<std::string> name = ReadName(bytes, &at);
    if (!name.ok()) return name.status();
    if (at + 10 > bytes.size()) return Malformed("record header cut short", at);
    Record record;
    record.name = *std::move(name);
    record.type = Read16(bytes, at);
    record.klass = Read16(bytes, at + 2);
    record.ttl = Read32(bytes, at + 4);
    const size_t data_length = Read16(bytes, at + 8);
    at += 10;
    if (at + data_length > bytes.size()) return Malformed("record data runs past the end", at);
    const absl::string_view data = bytes.substr(at, data_length);
    const bool in_answers = i < header->answer_count;
    const bool in_additional = i >= records - header->additional_count;
    if (record.type == kTypeOpt) {
      if (!in_additional) return Malformed("OPT record outside the additional section", record_start);
      if (!record.name.empty()) return Malformed("OPT record not at the root name", record_start);
      if (message.edns_udp_size) return Malformed("second OPT record", record_start);
      message.edns_udp_size = record.klass;
    } else if (in_answers && record.klass == kClassIn &&
               (record.type == kTypeA || record.type == kTypeAaaa)) {
      const size_t want = record.type == kTypeA ? 4 : 16;
      if (data_length != want) return Malformed("address record of the wrong length", at);
      engine::IpAddress address;
      address.family =
          record.type == kTypeA ? engine::IpAddress::Family::kV4 : engine::IpAddress::Family::kV6;
      std::copy(data.begin(), data.end(), address.bytes.begin());
      record.address = address;
    } else if (in_answers && record.type == kTypeCname) {
      size_t target_at = at;
      absl::StatusOr<std::string> target = ReadName(bytes, &target_at);
      if (!target.ok()) return target.status();
      if (target_at != at + data_length) return Malformed("CNAME data is not one name", at);
      record.target = *std::move(target);
    }
    at += data_length;
    if (in_answers) message.answers.push_back(std::move(record));
  }
  if (at != bytes.size()) {
    return Malformed(absl::StrCat(bytes.size() - at, " bytes after the last record"), at);
  }
  return message;
}

std::string BuildReply(absl::string_view query_bytes, const Message& query, Rcode rcode) {
  std::string out(query_bytes.substr(0, query.question_end));
  const uint16_t flags = kFlagResponse | (query.header.flags & (kOpcodeMask | kFlagRecursionDesired)) |
                         kFlagRecursionAvailable | static_cast<uint16_t>(rcode);
  Put16(out, 2, flags);
  Put16(out, 4, static_cast<uint16_t>(query.questions.size()));
  Put16(out, 6, 0);
  Put16(out, 8, 0);
  Put16(out, 10, 0);
  return out;
}

std::string BuildHeaderOnlyReply(absl::string_view query_bytes, Rcode rcode) {
  std::string out(kHeaderBytes, '\0');
  if (query_bytes.size() >= 2) {
    out[0] = query_bytes[0];
    out[1] = query_bytes[1];
  }
  Put16(out, 2, kFlagResponse | kFlagRecursionAvailable | static_cast<uint16_t>(rcode));
  return out;
}

std::string Truncate(absl::string_view answer, const Message& message) {
  std::string out(answer.substr(0, message.question_end));
  Put16(out, 2, message.header.flags | kFlagTruncated);
  Put16(out, 6, 0);
  Put16(out, 8, 0);
  Put16(out, 10, 0);
  return out;
}

bool AnswersQuery(const Message& query, const Message& answer) {
  if (!answer.header.response() || answer.header.id != query.header.id ||
      answer.questions.size() != query.questions.size()) {
    return false;
  }
  for (size_t i = 0; i < query.questions.size(); ++i) {
    const Question& q = query.questions[i];
    const Question& a = answer.questions[i];
    if (q.name != a.name || q.type != a.type || q.klass != a.klass) return false;
  }
  return true;
}

AnswerAddresses AddressesFor(const Message& answer) {
  AnswerAddresses out;
  if (answer.questions.empty()) return out;
  // The names that stand for the question's: itself and each CNAME target reached from it.
  std::vector<std::string> names = {answer.questions.front().name};
  std::vector<bool> used(answer.answers.size(), false);
  uint32_t ttl = UINT32_MAX;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < answer.answers.size(); ++i) {
      const Record& record = answer.answers[i];
      if (used[i] || record.type != kTypeCname) continue;
      if (std::find(names.begin(), names.end(), record.name) == names.end()) continue;
      used[i] = true;
      ttl = std::min(ttl, record.ttl);
      names.push_back(record.target);
      grew = true;
    }
  }
  for (const Record& record : answer.answers) {
    if (!record.address) continue;
    if (std::find(names.begin(), names.end(), record.name) == names.end()) continue;
    if (std::find(out.addresses.begin(), out.addresses.end(), *record.address) ==
        out.addresses.end()) {
      out.addresses.push_back(*record.address);
    }
    ttl = std::min(ttl, record.ttl);
  }
  out.ttl = out.addresses.empty() ? 0 : ttl;
  return out;
}

}  // namespace leash::proxy::dns
