// Fuzz target: the ports.json parser. Any input loads or is refused as corrupt — never a crash
// — and what loads serializes and loads again to the same assignments.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "controlplane/port_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<leash::controlplane::PortMap> map =
      leash::controlplane::PortMap::Parse(json, "fuzz");
  if (!map.ok()) return 0;
  absl::StatusOr<leash::controlplane::PortMap> again =
      leash::controlplane::PortMap::Parse(map->Serialize(), "fuzz");
  if (!again.ok() || again->All().size() != map->All().size()) std::abort();
  return 0;
}
