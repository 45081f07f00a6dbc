// UTF-8 checks for text that crosses into protobuf: proto3 string fields must be UTF-8 (a
// message holding anything else fails to parse at the other end), while file names and
// command-line arguments are any bytes.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace leash::engine {

// Whether `text` is valid UTF-8, by protobuf's own rule (the one its parser applies).
bool IsValidUtf8(absl::string_view text);

// `text` with every byte that is not part of a valid UTF-8 sequence written as the four
// characters \xNN (lowercase hex); valid text is returned as it is.
std::string EscapeInvalidUtf8(absl::string_view text);

}  // namespace leash::engine
