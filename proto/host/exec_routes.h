// The host's routes to running a program that raise no fanotify event at all (the kernel
// never reports them to the watcher, so no commands rule sees them), read from the kernel's
// settings: an executable memfd (vm.memfd_noexec), a filesystem mounted inside an agent's own
// user and mount namespace (unprivileged user namespaces), a FUSE filesystem (/dev/fuse).
// leashd reads them on every reconcile pass (the first is at start); `leash status` and
// `leash validate` show each open route with the setting that closes it and what that breaks.
#pragma once

#include <string>
#include <vector>

#include "leash/v1/control.pb.h"
#include "leash/v1/judgement.pb.h"

namespace leash::host {

// Reads the settings under `root` ("" for the host: /proc/sys/..., /dev/fuse). A setting that
// cannot be read counts as the kernel's default (the route open), and says so.
std::vector<leash::v1::ExecRoute> ReadExecRoutes(const std::string& root = "");

// One warning finding per open route, for `leash validate`.
std::vector<leash::v1::Finding> ExecRouteFindings(const std::vector<leash::v1::ExecRoute>& routes);

// "open: memfd exec (vm.memfd_noexec = 0) ...; closed by ...; breaks ..." — one line per route.
std::string DescribeExecRoute(const leash::v1::ExecRoute& route);

}  // namespace leash::host
