// systemd's service notification protocol (sd_notify(3)), spoken directly: one datagram of
// "KEY=VALUE" lines to the socket named by $NOTIFY_SOCKET (a path, or an abstract name written
// with a leading '@'). leashd says READY=1 once every subject is in force, so that
// `systemctl start leash` returns only when enforcement is real (Type=notify), and feeds the
// watchdog (WatchdogSec=) from its reconcile loop. Without $NOTIFY_SOCKET (not started by
// systemd, or a unit that is not Type=notify) nothing is sent and nothing fails.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leash::controlplane {

// Sends `state` (e.g. "READY=1\nSTATUS=...") to $NOTIFY_SOCKET. OK when sent, and when there is
// no $NOTIFY_SOCKET; an error naming the socket when it is set but cannot be reached.
absl::Status NotifySystemd(absl::string_view state);

// Puts `fds` in the service's file-descriptor store (sd_pid_notify_with_fds(3) with
// "FDSTORE=1\nFDNAME=<name>"; the unit needs FileDescriptorStoreMax= at least their count):
// systemd keeps its own copies while the service restarts and hands them to the next start
// (ListenFds). Sent in datagrams of at most 253 descriptors (the kernel's SCM_MAX_FD). OK
// when there is no $NOTIFY_SOCKET (nothing stores them then); an error naming the socket when
// a datagram is not taken.
absl::Status StoreFdsInSystemd(absl::string_view name, const std::vector<int>& fds);

// The descriptors systemd passed this process (sd_listen_fds_with_names(3)): numbers 3.. with
// $LISTEN_FDS, their names from $LISTEN_FDNAMES, when $LISTEN_PID is this process. Each is
// made close-on-exec, and the three variables are unset so that no child takes them as its
// own. Empty when none were passed.
std::vector<std::pair<int, std::string>> TakeListenFds();

// How often systemd expects "WATCHDOG=1": half of $WATCHDOG_USEC (sd_watchdog_enabled(3)'s
// advice), when it is set and $WATCHDOG_PID, if set, is this process. nullopt: no watchdog.
std::optional<absl::Duration> WatchdogPingInterval();

// A STATUS= value on one line (systemd shows it in `systemctl status`).
std::string StatusLine(absl::string_view text);

}  // namespace leash::controlplane
