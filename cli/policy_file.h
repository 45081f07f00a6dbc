// Reading a policy file the operator names (the floor, a profile to save): refused before it is
// read whole when it is over the cap, and before it is parsed or sent to leashd when it is not
// UTF-8, each with a sentence that names the file, rather than a parser's or gRPC's error.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leash::cli {

// The file's text. NotFound (naming the file and the errno text) when it cannot be opened;
// FailedPrecondition naming its size and the cap (engine::kMaxPolicyYamlBytes) when it is over
// it; InvalidArgument naming the first line that is not UTF-8 (engine::CheckPolicyYamlText).
absl::StatusOr<std::string> ReadPolicyFile(const std::string& path);

}  // namespace leash::cli
