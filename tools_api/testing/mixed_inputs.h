// Deterministic "mixed" tool-call inputs for benchmarks: an array of the calls an agent makes
// (shell commands, file writes with source code, fetches, searches, prose), with a secret, an
// email address or a privilege escalation in about one call in forty.
#pragma once

#include <cstddef>
#include <string>

namespace leash::tools::testing {

// JSON text of about `bytes` bytes (never more).
std::string MixedInputsJson(size_t bytes, unsigned seed = 1);

}  // namespace leash::tools::testing
