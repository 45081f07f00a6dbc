#include "controlplane/bindings_lock.h"

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

absl::StatusOr<FileLock> AcquireBindingsLock(const std::string& state_dir, FileLock::Mode mode) {
  return FileLock::Acquire(absl::StrCat(state_dir, "/", kBindingsLockName), mode);
}

}  // namespace leash::controlplane
