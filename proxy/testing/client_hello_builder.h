// Builds TLS ClientHello bytes for tests, fuzz seeds and benchmark clients: a TLS 1.3-shaped
// hello with chosen SNI, ECH and extension layout, optionally split across several records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace leash::proxy::testing {

struct ClientHelloSpec {
  // Empty: no server_name extension.
  std::string sni;
  bool ech = false;
  // No extensions block at all (a pre-TLS-1.3 hello).
  bool no_extensions = false;
  // Padding extension bytes, to make a large hello.
  size_t padding = 0;
  // Extra raw extensions (type, data) appended after the others.
  std::vector<std::pair<uint16_t, std::string>> extra_extensions;
  // Split the handshake message into records of at most this many bytes (0: one record).
  size_t record_size = 0;
};

// The hello as sent on the wire (record layer included).
std::string BuildClientHello(const ClientHelloSpec& spec);

// The raw server_name extension data for `names` (each a host_name entry).
std::string ServerNameExtension(const std::vector<std::string>& names);

}  // namespace leash::proxy::testing
