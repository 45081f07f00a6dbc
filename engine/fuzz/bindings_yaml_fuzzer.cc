// Fuzz target: bindings.yaml. Any input must load or be refused with a positioned error —
// never crash, hang or let a yaml-cpp exception escape — and whatever loads must emit and load
// back to the same bindings (the store rewrites the file from what it read).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "engine/bindings_yaml.h"
#include "engine/config_yaml.h"
#include "engine/consent.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<leash::engine::Bindings> bindings =
      leash::engine::ParseBindingsYaml(yaml, "fuzz");
  if (!bindings.ok()) return 0;
  const std::string emitted = leash::engine::EmitBindingsYaml(*bindings);
  absl::StatusOr<leash::engine::Bindings> again =
      leash::engine::ParseBindingsYaml(emitted, "emitted");
  if (!again.ok() || !(*again == *bindings)) {
    fprintf(stderr, "input:\n%s\nemitted:\n%s\nreparsed: %s\n",
            absl::CHexEscape(yaml).c_str(), absl::CHexEscape(emitted).c_str(),
            again.ok() ? "different bindings" : std::string(again.status().message()).c_str());
    std::abort();
  }
  // Whatever the file holds, validate judges it without failing.
  leash::engine::ProfileLibrary profiles;
  leash::engine::ValidateTiers(leash::v1::Config(), *bindings, profiles, {"leash-iris"});
  return 0;
}
