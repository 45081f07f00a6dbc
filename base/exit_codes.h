// The exit codes of every Leash program: leashd, leash-proxy, leash-fswatch and the leash CLI.
// One scheme, because their readers are shared: systemd restarts leash.service on any code but
// 0 (packaging/leash.service, Restart=on-failure); `leash teardown --unless-failed`
// (cli/service_stop.cc) releases the chains only after "exited 0" or a stop signal; leashd's
// supervisor names a sidecar's code in its log; scripts and tests read the CLI's.
#pragma once

namespace leash::base {

// Done; a daemon stopped on purpose (SIGTERM, SIGINT).
inline constexpr int kExitOk = 0;
// Refused: a check that blocks, a write not put in force, findings that fail validation; a
// program that will not run on this host or with this config (leashd's refusals, a kernel or
// capability leash-fswatch lacks); leashd stopping for failure (its chains left in place).
inline constexpr int kExitRefused = 1;
// A bad flag or argument; the message names it and the fix.
inline constexpr int kExitUsage = 2;
// leashd is not answering (the CLI), or its admin socket is not the caller's.
inline constexpr int kExitUnreachable = 3;
// A start that failed for want of something it was handed or needed: a descriptor, the first
// map, an event loop.
inline constexpr int kExitStartFailed = 4;
// `leash status`: leashd answers, but something that should be in force is not (a subject
// without its policy, something the last reconcile could not put in force, a sidecar down).
// The same number as a failed start: in both, enforcement is not what it should be.
inline constexpr int kExitDegraded = 4;
// The event loop stalled and its watchdog ended the process (leash-fswatch).
inline constexpr int kExitWatchdog = 5;
// The event loop failed reading the kernel (leash-fswatch).
inline constexpr int kExitLoopFailed = 6;
// `leash tool check`: the caller, or the --account it named, is not a subject leashd enforces,
// so nothing was judged (as root with no --account: root is never a leashed subject).
inline constexpr int kExitNotSubject = 7;

}  // namespace leash::base
