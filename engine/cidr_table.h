// IP matching without a scan: one hash table per prefix length in use, so a lookup costs at
// most one probe per distinct prefix length (≤ 33 for IPv4, ≤ 129 for IPv6), whatever the
// number of entries.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/ip_address.h"

namespace leash::engine {

class CidrTable {
 public:
  // Adds a network (host bits already clear). `port` 0 is any port.
  void Add(const IpAddress& network, int prefix_len, uint16_t port, int id);

  // Returns the id of the most specific entry matching (`address`, `port`), or -1. An
  // IPv4-mapped IPv6 address is matched as the IPv4 address it carries.
  int Match(const IpAddress& address, uint16_t port) const;

 private:
  struct Rule {
    uint16_t port;
    int id;
  };
  using Key = std::array<uint8_t, 16>;
  struct Family {
    // prefix length -> masked address -> rules; iterated longest prefix first.
    std::map<int, absl::flat_hash_map<Key, std::vector<Rule>>, std::greater<int>> by_length;
  };
  Family v4_;
  Family v6_;
};

}  // namespace leash::engine
