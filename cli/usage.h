// `leash --help` and `leash <command> --help`: every command and flag, one line each.
#pragma once

#include <string>

namespace leash::cli {

// The help text for `command`, or the overview when it is empty or unknown.
std::string Usage(const std::string& command);

}  // namespace leash::cli
