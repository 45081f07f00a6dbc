// --json: one JSON object on stdout for every outcome of a command, its errors and refusals
// included, so a script reads one shape whether the command succeeded or not. The commands
// print as they always do; `leash` (and leashd's --init / --teardown, which `leash init` and
// `leash teardown` hand over to) give them buffers under --json and hand what they printed
// here, which is the one place the envelope is made.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace leash::base {

// One line of JSON (no newline) for a command that printed `out` and `err` and returns
// `exit_code`: {"ok": <exit_code == 0>, "exit_code": N, "error": "<what went wrong>", ...}
// followed by the fields of the object the command printed on `out` (a refusal's "refusal",
// a status's "subjects", ...). Text that is not one JSON object is carried as "output". What
// went to `err` is "error" on a failure and "notes" (one string a line) on success; a leading
// "leash: " is dropped from each line.
std::string JsonOutcome(absl::string_view out, absl::string_view err, int exit_code);

// Whether `--json` is among the flags of argv (before any "--"), for the failures that come
// before the arguments are parsed.
bool WantsJson(int argc, const char* const* argv);

}  // namespace leash::base
