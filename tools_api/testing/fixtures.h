// Test support shared by the tools_api tests, fuzz target and benchmarks: one compiled
// ToolChecker, a policy allowing named tools, and serialized google.protobuf.Values nested
// deeper than any protobuf library would serialize them (built as wire bytes, inside out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "engine/compiled_policy.h"
#include "tools_api/tool_checker.h"

namespace leash::tools::testing {

// Compiled once per process.
const ToolChecker& SharedChecker();

// A whitelist of exactly `tools`, every other field at its default except the size bound.
engine::CompiledPolicy PolicyAllowing(std::initializer_list<const char*> tools,
                                      uint64_t max_input_bytes = 1 << 20);

// A serialized Value of `depth` nested lists: [[[...]]].
std::string NestedListValueBytes(int depth);

// The same, as deep as fits in `max_bytes`.
std::string NestedListValueBytesUpTo(size_t max_bytes);

}  // namespace leash::tools::testing
