#include "engine/cidr_table.h"

namespace leash::engine {

void CidrTable::Add(const IpAddress& network, int prefix_len, uint16_t port, int id) {
  Family& family = network.family == IpAddress::Family::kV4 ? v4_ : v6_;
  family.by_length[prefix_len][MaskAddress(network, prefix_len).bytes].push_back(Rule{port, id});
}

int CidrTable::Match(const IpAddress& address, uint16_t port) const {
  const IpAddress unmapped = UnmapV4(address);
  const Family& family = unmapped.family == IpAddress::Family::kV4 ? v4_ : v6_;
  for (const auto& [prefix_len, table] : family.by_length) {
    auto it = table.find(MaskAddress(unmapped, prefix_len).bytes);
    if (it == table.end()) continue;
    for (const Rule& rule : it->second) {
      if (rule.port == 0 || rule.port == port) return rule.id;
    }
  }
  return -1;
}

}  // namespace leash::engine
