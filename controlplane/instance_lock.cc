#include "controlplane/instance_lock.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controlplane/atomic_file.h"

namespace leash::controlplane {
namespace {

std::string LockPath(const std::string& run_dir) {
  return absl::StrCat(run_dir, "/", kInstanceLockName);
}

// "pid N, from <pidfile>", or why the pid is not known yet.
std::string Describe(const std::string& run_dir) {
  const std::string pidfile = absl::StrCat(run_dir, "/", kPidfileName);
  std::string pid;
  if (absl::StatusOr<std::string> text = ReadFile(pidfile); text.ok()) {
    pid = std::string(absl::StripAsciiWhitespace(*text));
  }
  if (pid.empty()) return absl::StrCat("its pid is not in ", pidfile, " yet: it is still starting");
  return absl::StrCat("pid ", pid, ", from ", pidfile);
}

}  // namespace

absl::StatusOr<FileLock> LockInstance(const std::string& run_dir) {
  absl::StatusOr<std::optional<FileLock>> lock = FileLock::TryExclusive(LockPath(run_dir));
  if (!lock.ok()) return lock.status();
  if (!lock->has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another leashd is running on ", run_dir, " (", Describe(run_dir),
        "). Stop it first (`systemctl stop leash`, or SIGTERM to its pid); to make it pick up "
        "a change, send it SIGHUP instead"));
  }
  return std::move(**lock);
}

absl::StatusOr<std::optional<std::string>> RunningLeashd(const std::string& run_dir) {
  absl::StatusOr<bool> held = FileLock::HeldExclusivelyElsewhere(LockPath(run_dir));
  if (!held.ok()) return held.status();
  if (!*held) return std::optional<std::string>();
  return std::optional<std::string>(Describe(run_dir));
}

}  // namespace leash::controlplane
