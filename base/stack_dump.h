// Dumping every thread's stack of this process to a descriptor (stderr, the journal), for the
// watchdogs: a reconcile that runs past 30 s, a watcher loop that stops for 10 s. Each other
// thread is signalled in turn and writes its own backtrace from the signal handler; the
// calling thread writes its own last. Reads only /proc (never marked by the watcher).
#pragma once

#include "absl/time/time.h"

namespace leash::base {

// Installs the handler and primes backtrace(3) (whose first call loads libgcc_s) so the dump
// itself loads nothing. Call once at startup, before any thread that may need dumping exists
// (leash-fswatch: before its marks go on).
void InstallStackDumpHandler();

// Writes "thread <tid> (<name>):" and the backtrace of every thread of the process to `fd`.
// A thread that cannot run its handler within `per_thread` (e.g. parked in a killable kernel
// wait) is named and skipped. Not reentrant: call from one watchdog at a time.
void DumpAllThreadStacks(int fd, absl::Duration per_thread = absl::Milliseconds(100));

}  // namespace leash::base
