// DNS messages built byte by byte for tests, fuzz seeds, the test resolver and the benchmark:
// queries (with EDNS0 when asked) and answers whose records name the question by a compression
// pointer, as resolvers write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace leash::proxy::dns::testing_wire {

// "github.com" -> its wire form (labels, then the root).
std::string WireName(const std::string& name);

// A query (RD set) for each (name, type), with an OPT record of `edns_udp_size` when given
// (`opt_records` of them: more than one is malformed).
std::string Query(uint16_t id, const std::vector<std::pair<std::string, uint16_t>>& questions,
                  std::optional<uint16_t> edns_udp_size = std::nullopt, int opt_records = 1);

struct RecordSpec {
  std::string name;
  uint16_t type = 0;
  uint32_t ttl = 0;
  // A/AAAA: the address as text; CNAME: the target name; anything else: the raw data.
  std::string data;
};

// A response (QR, RD, RA) to a one-question query, its records in the answer section. A record
// whose name is the question's is written as a pointer to it. `flags_extra` is OR'ed into the
// flags (0x0200: TC; the low 4 bits: the rcode).
std::string Answer(uint16_t id, const std::string& qname, uint16_t qtype,
                   const std::vector<RecordSpec>& records, uint16_t flags_extra = 0);

}  // namespace leash::proxy::dns::testing_wire
