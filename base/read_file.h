// Reading a whole file into a string: configs, lists, /proc files, the test-only map file. Not
// for the event loop: it allocates as the file grows.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leash::base {

// The file's bytes. NotFound ("<path> does not exist") when it does not exist; other errors
// carry errno and the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace leash::base
