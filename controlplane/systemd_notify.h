// systemd's service notification protocol (sd_notify(3)), spoken directly: one datagram of
// "KEY=VALUE" lines to the socket named by $NOTIFY_SOCKET (a path, or an abstract name written
// with a leading '@'). leashd says READY=1 once every subject is in force, so that
// `systemctl start leash` returns only when enforcement is real (Type=notify), and feeds the
// watchdog (WatchdogSec=) from its reconcile loop. Without $NOTIFY_SOCKET (not started by
// systemd, or a unit that is not Type=notify) nothing is sent and nothing fails.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leash::controlplane {

// Sends `state` (e.g. "READY=1\nSTATUS=...") to $NOTIFY_SOCKET. OK when sent, and when there is
// no $NOTIFY_SOCKET; an error naming the socket when it is set but cannot be reached.
absl::Status NotifySystemd(absl::string_view state);

// How often systemd expects "WATCHDOG=1": half of $WATCHDOG_USEC (sd_watchdog_enabled(3)'s
// advice), when it is set and $WATCHDOG_PID, if set, is this process. nullopt: no watchdog.
std::optional<absl::Duration> WatchdogPingInterval();

// A STATUS= value on one line (systemd shows it in `systemctl status`).
std::string StatusLine(absl::string_view text);

}  // namespace leash::controlplane
