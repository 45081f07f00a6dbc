#include "controlplane/bindings_lock.h"

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

absl::StatusOr<base::FileLock> AcquireBindingsLock(const std::string& state_dir, base::FileLock::Mode mode) {
  return base::FileLock::Acquire(absl::StrCat(state_dir, "/", kBindingsLockName), mode);
}

}  // namespace leash::controlplane
