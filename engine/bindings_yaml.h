// bindings.yaml <-> Bindings. The file leashd writes (/var/lib/leash/bindings.yaml):
//
//   bindings:
//     "agent:leash-iris":
//       profile: "web-research"
//       acks: ["network.allow:openai.com"]
//     "global":
//       profile: "strict"
//       acks: []
//
// Pure (text in, text out); yaml-cpp's exceptions are caught here. Parsing is strict about
// shape (unknown keys, duplicate scopes, a missing profile are errors with line and column)
// and tolerant of content: a scope that no longer parses (a legacy team: binding) or an ack
// that matches nothing loads, so validate can report it instead of the whole file failing.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tiers.h"

namespace leash::engine {

// Parses the file's text (UTF-8; anything else is refused). An empty file (or one holding only comments) is no bindings.
// InvalidArgument naming `source`, the line and column and what is wrong.
absl::StatusOr<Bindings> ParseBindingsYaml(absl::string_view yaml, absl::string_view source);

// The file's text for `bindings`; ParseBindingsYaml reads it back to the same Bindings.
std::string EmitBindingsYaml(const Bindings& bindings);

}  // namespace leash::engine
