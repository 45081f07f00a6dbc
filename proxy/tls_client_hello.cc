#include "proxy/tls_client_hello.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

namespace leash::proxy {
namespace {

constexpr uint8_t kHandshakeRecord = 0x16;
constexpr uint8_t kClientHelloType = 0x01;
constexpr size_t kRecordHeader = 5;
constexpr size_t kMaxRecordPayload = 16384;  // 2^14, RFC 8446 5.1
constexpr uint16_t kServerNameExtension = 0x0000;
constexpr uint16_t kEchExtension = 0xfe0d;
constexpr size_t kMaxHostName = 255;

// Bounds-checked reads over one span; every read fails once the span is exhausted.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  bool U8(uint8_t* out) {
    if (data_.size() < 1) return false;
    *out = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return true;
  }
  bool U16(uint16_t* out) {
    if (data_.size() < 2) return false;
    *out = static_cast<uint16_t>((static_cast<uint8_t>(data_[0]) << 8) |
                                 static_cast<uint8_t>(data_[1]));
    data_.remove_prefix(2);
    return true;
  }
  bool Bytes(size_t n, absl::string_view* out) {
    if (data_.size() < n) return false;
    *out = data_.substr(0, n);
    data_.remove_prefix(n);
    return true;
  }
  bool Skip(size_t n) {
    absl::string_view ignored;
    return Bytes(n, &ignored);
  }
  bool empty() const { return data_.empty(); }
  size_t size() const { return data_.size(); }

 private:
  absl::string_view data_;
};

ClientHelloResult Malformed(std::string error) {
  ClientHelloResult result;
  result.state = ParseState::kMalformed;
  result.error = std::move(error);
  return result;
}

// server_name extension data: a list of (type, name); at most one host_name (RFC 6066 3).
ClientHelloResult ReadServerName(absl::string_view data, ClientHello* hello) {
  Reader reader(data);
  uint16_t list_length = 0;
  if (!reader.U16(&list_length) || list_length != reader.size() || list_length == 0) {
    return Malformed("server_name extension has a bad list length");
  }
  while (!reader.empty()) {
    uint8_t name_type = 0;
    uint16_t name_length = 0;
    absl::string_view name;
    if (!reader.U8(&name_type) || !reader.U16(&name_length) || !reader.Bytes(name_length, &name)) {
      return Malformed("server_name entry overruns its extension");
    }
    if (name_type != 0) continue;  // not host_name: no other type is defined
    if (hello->has_server_name) return Malformed("server_name carries more than one host_name");
    if (name.empty() || name.size() > kMaxHostName) {
      return Malformed(absl::StrCat("server_name host_name of ", name.size(), " bytes"));
    }
    for (char c : name) {
      // RFC 6066: a HostName is ASCII; a control byte or space would only ever mislead a log.
      if (c <= 0x20 || c >= 0x7f) return Malformed("server_name host_name is not printable ASCII");
    }
    hello->has_server_name = true;
    hello->server_name = std::string(name);
  }
  ClientHelloResult ok;
  ok.state = ParseState::kComplete;
  return ok;
}

// The ClientHello body (after the 4-byte handshake header).
ClientHelloResult ReadBody(absl::string_view body) {
  Reader reader(body);
  uint16_t legacy_version = 0;
  uint8_t session_id_length = 0;
  uint16_t cipher_suites_length = 0;
  uint8_t compression_length = 0;
  if (!reader.U16(&legacy_version) || !reader.Skip(32)) return Malformed("ClientHello truncated");
  if (!reader.U8(&session_id_length) || session_id_length > 32 ||
      !reader.Skip(session_id_length)) {
    return Malformed("ClientHello has a bad session id");
  }
  if (!reader.U16(&cipher_suites_length) || cipher_suites_length < 2 ||
      cipher_suites_length % 2 != 0 || !reader.Skip(cipher_suites_length)) {
    return Malformed("ClientHello has bad cipher suites");
  }
  if (!reader.U8(&compression_length) || compression_length < 1 ||
      !reader.Skip(compression_length)) {
    return Malformed("ClientHello has bad compression methods");
  }
  ClientHelloResult result;
  result.state = ParseState::kComplete;
  if (reader.empty()) return result;  // a hello with no extensions (allowed before TLS 1.3)
  uint16_t extensions_length = 0;
  if (!reader.U16(&extensions_length) || extensions_length != reader.size()) {
    return Malformed("ClientHello extensions do not fill the message");
  }
  std::vector<uint16_t> seen;
  while (!reader.empty()) {
    uint16_t type = 0;
    uint16_t length = 0;
    absl::string_view data;
    if (!reader.U16(&type) || !reader.U16(&length) || !reader.Bytes(length, &data)) {
      return Malformed("ClientHello extension overruns the message");
    }
    for (uint16_t t : seen) {
      // RFC 8446 4.2: no two extensions of one type. Two server_names would be two answers.
      if (t == type) return Malformed(absl::StrCat("ClientHello repeats extension ", type));
    }
    seen.push_back(type);
    if (type == kServerNameExtension) {
      ClientHelloResult name = ReadServerName(data, &result.hello);
      if (name.state != ParseState::kComplete) return name;
    } else if (type == kEchExtension) {
      result.hello.has_ech = true;
    }
  }
  return result;
}

}  // namespace

ClientHelloResult ParseClientHello(absl::string_view bytes, bool final) {
  ClientHelloResult result;
  if (bytes.empty()) {
    result.state = final ? ParseState::kNotThisProtocol : ParseState::kNeedMore;
    return result;
  }
  if (static_cast<uint8_t>(bytes[0]) != kHandshakeRecord) {
    result.state = ParseState::kNotThisProtocol;
    return result;
  }
  // Every TLS version's record layer starts 0x16 0x03; anything else is not TLS.
  if (bytes.size() >= 2 && bytes[1] != 0x03) {
    result.state = ParseState::kNotThisProtocol;
    return result;
  }
  // Reassemble the handshake stream from as many records as it takes.
  std::string handshake;
  size_t pos = 0;
  while (true) {
    if (handshake.size() >= 4) {
      if (static_cast<uint8_t>(handshake[0]) != kClientHelloType) {
        return Malformed("first handshake message is not a ClientHello");
      }
      const size_t length = (static_cast<uint8_t>(handshake[1]) << 16) |
                            (static_cast<uint8_t>(handshake[2]) << 8) |
                            static_cast<uint8_t>(handshake[3]);
      if (length > kMaxClientHelloBytes) {
        result.state = ParseState::kTooLarge;
        result.error = absl::StrCat("ClientHello of ", length, " bytes exceeds the ",
                                    kMaxClientHelloBytes, "-byte bound");
        return result;
      }
      if (handshake.size() >= 4 + length) {
        return ReadBody(absl::string_view(handshake).substr(4, length));
      }
    }
    if (bytes.size() - pos < kRecordHeader) break;
    const absl::string_view header = bytes.substr(pos, kRecordHeader);
    if (static_cast<uint8_t>(header[0]) != kHandshakeRecord || header[1] != 0x03) {
      return Malformed("a non-handshake record interrupts the ClientHello");
    }
    const size_t record_length =
        (static_cast<uint8_t>(header[3]) << 8) | static_cast<uint8_t>(header[4]);
    if (record_length == 0 || record_length > kMaxRecordPayload) {
      return Malformed(absl::StrCat("TLS record of ", record_length, " bytes"));
    }
    if (bytes.size() - pos - kRecordHeader < record_length) break;
    if (pos + kRecordHeader + record_length > kMaxPeekBytes) {
      // The proxy never peeks further; the answer must not depend on how much was handed in.
      result.state = ParseState::kTooLarge;
      result.error = absl::StrCat("no complete ClientHello in the first ", kMaxPeekBytes, " bytes");
      return result;
    }
    handshake.append(bytes.data() + pos + kRecordHeader, record_length);
    pos += kRecordHeader + record_length;
  }
  if (bytes.size() >= kMaxPeekBytes) {
    result.state = ParseState::kTooLarge;
    result.error = absl::StrCat("no complete ClientHello in the first ", kMaxPeekBytes, " bytes");
    return result;
  }
  if (final) {
    if (bytes.size() < kRecordHeader) {
      // Too short to be a TLS record at all: an opaque protocol that happens to start 0x16.
      result.state = ParseState::kNotThisProtocol;
      return result;
    }
    return Malformed(absl::StrCat("ClientHello incomplete after ", bytes.size(), " bytes"));
  }
  result.state = ParseState::kNeedMore;
  return result;
}

}  // namespace leash::proxy
