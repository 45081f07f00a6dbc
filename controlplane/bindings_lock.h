// The one bindings writer lock: a flock(2) on <state dir>/bindings.lock. Every write of
// bindings.yaml, a profile or the unbind ledger holds it exclusively, so writers in separate
// processes (leashd, a second leashd, a test child) serialise; a consistent read of bindings
// and profiles together holds it shared. The profile library has no lock of its own: a profile
// edit and the bindings it revalidates are written under this one (docs/ARCHITECTURE.md, rule P4).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "base/file_lock.h"

namespace leash::controlplane {

inline constexpr char kBindingsLockName[] = "bindings.lock";

// Opens (creating, mode 0600) <state_dir>/bindings.lock and waits for the lock. The state
// folder must exist. Errors carry errno and the path.
absl::StatusOr<FileLock> AcquireBindingsLock(const std::string& state_dir, FileLock::Mode mode);

}  // namespace leash::controlplane
