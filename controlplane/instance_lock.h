// One leashd per run folder: it holds an exclusive flock on <run_dir>/leashd.lock from before it
// touches any chain, socket or port until it ends (the kernel drops the lock however it ends).
// A second leashd refuses to start; `leash teardown` refuses to release chains under a leashd
// that is running.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controlplane/file_lock.h"

namespace leash::controlplane {

inline constexpr char kInstanceLockName[] = "leashd.lock";
inline constexpr char kPidfileName[] = "leashd.pid";

// Takes the lock for this leashd. FailedPrecondition when another leashd holds it, with a
// message that names its pid (from the pidfile) and what to do instead.
absl::StatusOr<FileLock> LockInstance(const std::string& run_dir);

// The leashd running on `run_dir` ("pid N, from <pidfile>"), or nullopt when none runs.
absl::StatusOr<std::optional<std::string>> RunningLeashd(const std::string& run_dir);

}  // namespace leash::controlplane
