// Sidecars that a previous leashd on the same folders left running. A leashd that is killed
// (SIGKILL, the OOM killer) runs no stop path; under systemd the unit's cgroup is killed with
// it, but without systemd its leash-fswatch and leash-proxy live on, still enforcing the last
// map they had. That is the right state while no leashd runs (closed, not open), but the next
// leashd's own proxy could not bind the ports they hold. Holding the one-instance lock, the next
// leashd knows no live leashd owns them, and stops them before starting its own.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace leash::controlplane {

// Whether `cmdline` (as /proc/<pid>/cmdline holds it: arguments separated by NUL bytes) is one
// of `binaries` started against `admin_socket` (--socket=... or --admin-socket=..., the way
// leashd starts its sidecars). A binary given without a folder ("leash-proxy") matches that
// program wherever it was started from: `leash teardown` does not know where the leashd that
// left the sidecars found them.
bool IsSidecarOf(absl::string_view cmdline, const std::vector<std::string>& binaries,
                 const std::string& admin_socket);

// Stops every process IsSidecarOf says is one of these (SIGTERM, then SIGKILL after 2 s), each
// through a pidfd opened before its command line was read, so a PID that is reused meanwhile
// is never signalled. Returns a line for the log for each one found.
std::vector<std::string> StopLeftoverSidecars(const std::vector<std::string>& binaries,
                                              const std::string& admin_socket);

// The descriptor numbers a watcher's command line says it holds the fanotify group and the
// pending table under (--fanotify-fd=N --pending-table-fd=M, as leashd starts it), or nullopt
// when it names either not.
std::optional<std::pair<int, int>> WatcherGroupNumbers(absl::string_view cmdline);

// The fanotify group (and its pending table) that a watcher a previous leashd left running
// holds, duplicated into this process (pidfd_getfd) before the leftovers are stopped: the next
// leashd keeps that very group, so its marks never go. Stopping the last holders of a group
// closes it, which answers every pending event allow and takes the marks with it, and a new
// group is not marked until a new watcher has a map: every subject's opens would go unjudged
// in between.
struct LeftoverGroup {
  int group_fd = -1;
  int pending_table_fd = -1;
  pid_t from = 0;  // the leftover watcher it was taken from
};
// `fswatch_binary` and `admin_socket` as for StopLeftoverSidecars. nullopt when no leftover
// watcher runs (or none whose descriptors could be taken; `lines` then says why).
std::optional<LeftoverGroup> TakeLeftoverGroup(const std::string& fswatch_binary,
                                               const std::string& admin_socket,
                                               std::vector<std::string>& lines);

}  // namespace leash::controlplane
