#include "proxy/testing/client_hello_builder.h"

namespace leash::proxy::testing {
namespace {

void U8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
void U16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v & 0xff));
}
void U24(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>((v >> 16) & 0xff));
  out->push_back(static_cast<char>((v >> 8) & 0xff));
  out->push_back(static_cast<char>(v & 0xff));
}
void Extension(std::string* out, uint16_t type, const std::string& data) {
  U16(out, type);
  U16(out, static_cast<uint16_t>(data.size()));
  out->append(data);
}

}  // namespace

std::string ServerNameExtension(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) {
    U8(&list, 0);
    U16(&list, static_cast<uint16_t>(name.size()));
    list.append(name);
  }
  std::string data;
  U16(&data, static_cast<uint16_t>(list.size()));
  data.append(list);
  return data;
}

std::string BuildClientHello(const ClientHelloSpec& spec) {
  std::string body;
  U16(&body, 0x0303);                 // legacy_version TLS 1.2
  body.append(32, '\x11');            // random
  U8(&body, 32);                      // legacy_session_id
  body.append(32, '\x22');
  U16(&body, 6);                      // cipher suites
  U16(&body, 0x1301);
  U16(&body, 0x1302);
  U16(&body, 0x1303);
  U8(&body, 1);                       // compression: null
  U8(&body, 0);
  if (!spec.no_extensions) {
    std::string extensions;
    if (!spec.sni.empty()) Extension(&extensions, 0x0000, ServerNameExtension({spec.sni}));
    Extension(&extensions, 0x002b, std::string("\x02\x03\x04", 3));  // supported_versions
    Extension(&extensions, 0x000a, std::string("\x00\x02\x00\x1d", 4));  // supported_groups
    if (spec.ech) {
      // An outer ECH extension: type outer, a cipher suite, config id, enc and payload.
      std::string ech("\x00\x00\x01\x00\x01\x07\x00\x20", 8);
      ech.append(32, '\x33');
      U16(&ech, 64);
      ech.append(64, '\x44');
      Extension(&extensions, 0xfe0d, ech);
    }
    for (const auto& [type, data] : spec.extra_extensions) Extension(&extensions, type, data);
    if (spec.padding > 0) Extension(&extensions, 0x0015, std::string(spec.padding, '\0'));
    U16(&body, static_cast<uint16_t>(extensions.size()));
    body.append(extensions);
  }
  std::string handshake;
  U8(&handshake, 0x01);
  U24(&handshake, static_cast<uint32_t>(body.size()));
  handshake.append(body);

  const size_t record_size = spec.record_size == 0 ? 16384 : spec.record_size;
  std::string wire;
  for (size_t pos = 0; pos < handshake.size(); pos += record_size) {
    const std::string fragment = handshake.substr(pos, record_size);
    U8(&wire, 0x16);
    U16(&wire, 0x0301);
    U16(&wire, static_cast<uint16_t>(fragment.size()));
    wire.append(fragment);
  }
  return wire;
}

}  // namespace leash::proxy::testing
