// Fuzz target: the entry grammars (network, path, command, tool, resolver) and the matchers
// built from whatever they accept. Any input must parse or be refused with a reason — never
// crash or hang — and an entry the grammar accepts must compile and be decidable.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/compiled_policy.h"
#include "engine/inert_entries.h"
#include "engine/network_entry.h"
#include "engine/path_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string entry(reinterpret_cast<const char*>(data), size);
  leash::engine::ParseNetworkEntry(entry).IgnoreError();
  leash::engine::ParseResolverEntry(entry).IgnoreError();
  leash::engine::ParsePathEntry(entry).IgnoreError();
  leash::engine::ParseCommandEntry(entry).IgnoreError();
  leash::engine::ParseToolEntry(entry).IgnoreError();

  leash::v1::Config config;
  config.mutable_network()->mutable_allow()->add_entries(entry);
  config.mutable_filesystem()->mutable_deny()->add_entries(entry);
  config.mutable_commands()->mutable_allow()->add_entries(entry);
  config.mutable_tools()->mutable_deny()->add_entries(entry);
  leash::engine::InertEntries(config);
  const leash::engine::CompiledPolicy policy = leash::engine::CompiledPolicy::Compile(config);
  leash::engine::NetworkSubject subject;
  subject.domain = entry;
  subject.port = 443;
  policy.DecideNetwork(subject);
  policy.DecidePath("/" + entry);
  policy.DecidePath(entry);
  policy.DecideCommand(entry);
  policy.DecideTool(entry);

  // DecidePath's fast path judges a path as it is when IsNormalAbsolutePath says normalizing
  // would not change it: the two must agree, and normalizing must be idempotent.
  for (const std::string& path : {entry, "/" + entry}) {
    const absl::StatusOr<std::string> normalized = leash::engine::NormalizeAbsolutePath(path);
    if (leash::engine::IsNormalAbsolutePath(path) != (normalized.ok() && *normalized == path)) {
      __builtin_trap();
    }
    if (normalized.ok() && !leash::engine::IsNormalAbsolutePath(*normalized)) __builtin_trap();
  }
  return 0;
}
