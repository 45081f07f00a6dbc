// The acting process's command line as a decision line shows it: the arguments joined by
// spaces, every secret or personal datum in them masked as tool inputs are (engine/mask.h),
// cut to a bound.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace leash::tools {
class Inspector;
}  // namespace leash::tools

namespace leash::engine {

// The most bytes of a command line a line carries, the cut marker included: a line stays short
// whatever the agent passes (an argv can be megabytes).
inline constexpr size_t kMaxCmdlineBytes = 512;
// Ends a command line that was cut to kMaxCmdlineBytes.
inline constexpr absl::string_view kCmdlineCutMarker = "...[cut]";

// `raw` as /proc/<pid>/cmdline holds it (each argument ending in NUL) turned into one line:
// NULs between arguments become spaces (trailing ones are dropped), secrets and personal data
// are masked over the whole text first — so a secret the bound would cut in two is still found
// — and the result is cut on a character boundary to at most kMaxCmdlineBytes, ending in
// kCmdlineCutMarker when it was cut.
std::string LoggedCmdline(absl::string_view raw, const tools::Inspector& inspector);

}  // namespace leash::engine
