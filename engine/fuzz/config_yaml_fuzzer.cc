// Fuzz target: the YAML loader, as a floor and as a profile, then emit and re-parse whatever
// loaded, and remove each list's first entry in the text (`leash <surface> remove`). Any input
// must load or be refused with a positioned error — never crash, hang or let a yaml-cpp
// exception escape — and a text edit either comes back or says why (the caller reads the
// result back and compares it, so what it returns is judged there).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

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
    const std::pair<const char*, const leash::v1::EntryList*> lists[] = {
        {"network.allow", &config->network().allow()},
        {"network.deny", &config->network().deny()},
        {"filesystem.allow", &config->filesystem().allow()},
        {"filesystem.deny", &config->filesystem().deny()},
        {"commands.allow", &config->commands().allow()},
        {"commands.deny", &config->commands().deny()},
        {"tools.allow", &config->tools().allow()},
        {"tools.deny", &config->tools().deny()},
    };
    for (const auto& [field, list] : lists) {
      if (list->entries().empty()) continue;
      const std::string name(field);
      const size_t dot = name.find('.');
      (void)leash::engine::RemoveFromYamlList(yaml, name.substr(0, dot), name.substr(dot + 1),
                                              list->entries(0));
    }
  }
  return 0;
}
