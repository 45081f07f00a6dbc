// Reading a whole small file (a /proc file, the test-only map file) into a string. Not for the
// event loop: it allocates as the file grows.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leash::fswatch {

// The file's bytes; the error carries the errno and the path.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace leash::fswatch
