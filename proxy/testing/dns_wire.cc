#include "proxy/testing/dns_wire.h"

#include <arpa/inet.h>

#include "absl/strings/str_split.h"

namespace leash::proxy::dns::testing_wire {
namespace {

void Append16(std::string& out, uint16_t value) {
  out += static_cast<char>(value >> 8);
  out += static_cast<char>(value & 0xFF);
}

void Append32(std::string& out, uint32_t value) {
  Append16(out, static_cast<uint16_t>(value >> 16));
  Append16(out, static_cast<uint16_t>(value & 0xFFFF));
}

std::string Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ar) {
  std::string out;
  for (uint16_t value : {id, flags, qd, an, uint16_t{0}, ar}) Append16(out, value);
  return out;
}

}  // namespace

std::string WireName(const std::string& name) {
  std::string out;
  for (absl::string_view label : absl::StrSplit(name, '.', absl::SkipEmpty())) {
    out += static_cast<char>(label.size());
    out.append(label.data(), label.size());
  }
  out += '\0';
  return out;
}

std::string Query(uint16_t id, const std::vector<std::pair<std::string, uint16_t>>& questions,
                  std::optional<uint16_t> edns_udp_size, int opt_records) {
  const int opts = edns_udp_size ? opt_records : 0;
  std::string out = Header(id, 0x0100, static_cast<uint16_t>(questions.size()), 0,
                           static_cast<uint16_t>(opts));
  for (const auto& [name, type] : questions) {
    out += WireName(name);
    Append16(out, type);
    Append16(out, 1);
  }
  for (int i = 0; i < opts; ++i) {
    out += '\0';  // the root
    Append16(out, 41);
    Append16(out, *edns_udp_size);
    Append32(out, 0);
    Append16(out, 0);
  }
  return out;
}

std::string Answer(uint16_t id, const std::string& qname, uint16_t qtype,
                   const std::vector<RecordSpec>& records, uint16_t flags_extra) {
  std::string out = Header(id, static_cast<uint16_t>(0x8180 | flags_extra), 1,
                           static_cast<uint16_t>(records.size()), 0);
  out += WireName(qname);
  Append16(out, qtype);
  Append16(out, 1);
  for (const RecordSpec& record : records) {
    if (record.name == qname) {
      out += "\xc0\x0c";
    } else {
      out += WireName(record.name);
    }
    Append16(out, record.type);
    Append16(out, 1);
    Append32(out, record.ttl);
    std::string data;
    if (record.type == 1 || record.type == 28) {
      unsigned char bytes[16];
      inet_pton(record.type == 1 ? AF_INET : AF_INET6, record.data.c_str(), bytes);
      data.assign(reinterpret_cast<char*>(bytes), record.type == 1 ? 4 : 16);
    } else if (record.type == 5) {
      data = WireName(record.data);
    } else {
      data = record.data;
    }
    Append16(out, static_cast<uint16_t>(data.size()));
    out += data;
  }
  return out;
}

}  // namespace leash::proxy::dns::testing_wire
