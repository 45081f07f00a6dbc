// The one bindings writer lock: a flock(2) on <state dir>/bindings.lock. Every write of
// bindings.yaml, a profile or the unbind ledger holds it exclusively, so writers in separate
// processes (leashd, a second leashd, a test child) serialise; a consistent read of bindings
// and profiles together holds it shared. Spec: "under the one bindings writer lock (the profile
// library has none of its own)".
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leash::controlplane {

inline constexpr char kBindingsLockName[] = "bindings.lock";

class BindingsLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Opens (creating, mode 0600) <state_dir>/bindings.lock and waits for the lock. The state
  // folder must exist. Errors carry errno and the path.
  static absl::StatusOr<BindingsLock> Acquire(const std::string& state_dir, Mode mode);

  BindingsLock(BindingsLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  BindingsLock& operator=(BindingsLock&& other) noexcept;
  BindingsLock(const BindingsLock&) = delete;
  BindingsLock& operator=(const BindingsLock&) = delete;
  // Releases the lock (closing the descriptor releases the flock).
  ~BindingsLock();

 private:
  explicit BindingsLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace leash::controlplane
