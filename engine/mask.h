// Masking of sensitive tool-input matches: what a secret or a personal datum looks like
// wherever Leash writes it (the CheckTool response, the decision log, error messages).
// "Sensitive tool-input matches (secrets, PII) are masked before they are written": a short
// prefix and the last 4 characters survive, so an operator can tell which key it was.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace leash::tools {

// Stands between the kept prefix and suffix.
inline constexpr absl::string_view kMaskFill = "****";

// `secret` with its middle replaced by kMaskFill. At 24 characters and over, the first 4 and
// the last 4 characters are kept; a shorter secret keeps at most a third of itself (a 12-
// character password keeps 2 + 2, an 8-character one 1 + 1), so a short secret is never
// mostly revealed. Counts characters, not bytes: the result is valid UTF-8 when the input is.
std::string MaskSecret(absl::string_view secret);

// A byte span [first, second) of a text.
using Span = std::pair<size_t, size_t>;

// `text` with every span in `spans` (sorted, non-overlapping, on character boundaries)
// replaced by MaskSecret of it.
std::string MaskSpans(absl::string_view text, const std::vector<Span>& spans);

class Inspector;

// `text` with every secret or personal datum the inspector finds in it masked (MaskSecret);
// privilege-escalation phrases are left as written. Overlapping matches are masked as one.
// What the tools surface does to a tool name or account, and leash-fswatch to a command line.
std::string MaskSensitive(const Inspector& inspector, absl::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary.
absl::string_view Utf8Prefix(absl::string_view text, size_t max_bytes);

}  // namespace leash::tools
