// Dry-run decisions from text, as `leash check <surface> <subject>` and Control.Check take
// them: network "host:port", "ip:port" or "[v6]:port"; filesystem a path; commands a binary
// path or name; tools a tool name.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/compiled_policy.h"
#include "engine/decision.h"

namespace leash::engine {

// Parses "host:port" / "ip:port" / "[v6]:port". InvalidArgument names what to pass.
absl::StatusOr<NetworkSubject> ParseNetworkCheckSubject(absl::string_view text);

// Decides `subject` (as text) on `surface` against `policy`. InvalidArgument when the text
// cannot be a subject of that surface.
absl::StatusOr<Decision> DecideText(const CompiledPolicy& policy, Surface surface,
                                    absl::string_view subject);

}  // namespace leash::engine
