// One leashd per run folder: it holds an exclusive flock on <run_dir>/leashd.lock, with its pid
// written in it, from before it touches any chain, socket or port until it ends (the kernel
// drops the lock however it ends). A second leashd refuses to start; `leash teardown` takes the
// same lock for as long as it releases chains, so it never releases them under a running leashd
// and no leashd starts while it does.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controlplane/file_lock.h"

namespace leash::controlplane {

inline constexpr char kInstanceLockName[] = "leashd.lock";
inline constexpr char kPidfileName[] = "leashd.pid";

// Takes the lock and writes this process's pid in it, waiting up to `wait` for a holder that
// lets go (a `leash teardown` finishing). nullopt when it is still held then.
absl::StatusOr<std::optional<FileLock>> LockInstance(const std::string& run_dir,
                                                     absl::Duration wait);

// Who holds the lock, for a refusal: "pid N", or that it is still starting.
std::string DescribeLockHolder(const std::string& run_dir);

}  // namespace leash::controlplane
