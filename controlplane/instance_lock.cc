#include "controlplane/instance_lock.h"

#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controlplane/atomic_file.h"

namespace leash::controlplane {

absl::StatusOr<std::optional<FileLock>> LockInstance(const std::string& run_dir,
                                                     absl::Duration wait) {
  const std::string path = absl::StrCat(run_dir, "/", kInstanceLockName);
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    absl::StatusOr<std::optional<FileLock>> lock = FileLock::TryExclusive(path);
    if (!lock.ok()) return lock.status();
    if (lock->has_value()) {
      // Read by whoever finds it locked: unlike the pidfile, never left naming a dead process.
      if (absl::Status said = (*lock)->Write(absl::StrCat(getpid(), "\n")); !said.ok()) {
        return said;
      }
      return lock;
    }
    if (absl::Now() >= deadline) return lock;
    absl::SleepFor(absl::Milliseconds(50));
  }
}

std::string DescribeLockHolder(const std::string& run_dir) {
  const std::string path = absl::StrCat(run_dir, "/", kInstanceLockName);
  std::string pid;
  if (absl::StatusOr<std::string> text = ReadFile(path); text.ok()) {
    pid = std::string(absl::StripAsciiWhitespace(*text));
  }
  if (pid.empty()) return absl::StrCat("its pid is not in ", path, " yet: it is still starting");
  return absl::StrCat("pid ", pid);
}

}  // namespace leash::controlplane
