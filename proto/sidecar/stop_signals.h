// How an enforcer process (leash-proxy, leash-fswatch) is stopped: SIGTERM or SIGINT ends it,
// SIGHUP never does. A cgroup-wide SIGHUP meant for leashd must not stop enforcement, and
// maps arrive over PolicyStream, never by signal. The stop signals are blocked before any
// thread starts, so every thread inherits the mask and only the thread that waits here takes
// them.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"

namespace leash::sidecar {

// SIGTERM, SIGINT and SIGHUP.
sigset_t StopSignals();

// Blocks the stop signals, and `also` (a signal the process waits for elsewhere, e.g. the
// watcher's takeover signal), in the calling thread and every thread it starts after.
// Returns the stop signals.
sigset_t BlockStopSignals(std::initializer_list<int> also = {});

// Waits up to `timeout` (absl::InfiniteDuration() for no limit) for SIGTERM or SIGINT among
// `signals` and returns it; each SIGHUP calls `on_hangup` and the wait goes on. nullopt when
// the time ran out.
std::optional<int> WaitForStopSignal(const sigset_t& signals, absl::Duration timeout,
                                     absl::FunctionRef<void()> on_hangup);

}  // namespace leash::sidecar
