// Fuzz target: the YAML loader, as a floor and as a profile, then emit and re-parse whatever
// loaded. Any input must load or be refused with a positioned error — never crash, hang or
// let a yaml-cpp exception escape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/config_yaml.h"
#include "engine/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  for (auto kind : {leash::engine::ConfigKind::kFloor, leash::engine::ConfigKind::kProfile}) {
    absl::StatusOr<leash::v1::Config> config = leash::engine::ParseConfigYaml(yaml, kind, "fuzz");
    if (!config.ok()) continue;
    leash::engine::ValidateConfig(*config, "fuzz");
    const std::string emitted = leash::engine::EmitConfigYaml(*config);
    // What was emitted must load again.
    if (!leash::engine::ParseConfigYaml(emitted, kind, "emitted").ok()) std::abort();
  }
  return 0;
}
