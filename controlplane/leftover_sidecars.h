// Sidecars that a previous leashd on the same folders left running. A leashd that is killed
// (SIGKILL, the OOM killer) runs no stop path; under systemd the unit's cgroup is killed with
// it, but without systemd its leash-fswatch and leash-proxy live on, still enforcing the last
// map they had. That is the right state while no leashd runs (closed, not open), but the next
// leashd's own proxy could not bind the ports they hold. Holding the one-instance lock, the next
// leashd knows no live leashd owns them, and stops them before starting its own.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace leash::controlplane {

// Whether `cmdline` (as /proc/<pid>/cmdline holds it: arguments separated by NUL bytes) is one
// of `binaries` started against `admin_socket` (--socket=... or --admin-socket=..., the way
// leashd starts its sidecars).
bool IsSidecarOf(absl::string_view cmdline, const std::vector<std::string>& binaries,
                 const std::string& admin_socket);

// Stops every process IsSidecarOf says is one of these (SIGTERM, then SIGKILL after 2 s), each
// through a pidfd opened before its command line was read, so a PID that is reused meanwhile
// is never signalled. Returns a line for the log for each one found.
std::vector<std::string> StopLeftoverSidecars(const std::vector<std::string>& binaries,
                                              const std::string& admin_socket);

}  // namespace leash::controlplane
