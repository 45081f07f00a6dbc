// Opening the decision log once, in leashd: logging.decisions is a file path (created 0640 in a
// 0750 folder if missing, opened O_APPEND so every process's one-write lines land whole) or
// "stdout". The descriptor is handed to the sidecars, which own no files.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leash::controlplane {

// Returns an O_APPEND descriptor for `sink` (a path, or "stdout" for a dup of fd 1).
absl::StatusOr<int> OpenDecisionLog(const std::string& sink);

}  // namespace leash::controlplane
