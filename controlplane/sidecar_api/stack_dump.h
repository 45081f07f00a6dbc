// Dumping every thread's stack of this process to a descriptor (stderr, the journal), for the
// watchdogs: a reconcile that runs past 30 s, a watcher loop that stops for 10 s. Each thread is
// signalled in turn and writes its own backtrace from the signal handler.
#pragma once

namespace leash::sidecar {

// Installs the handler and primes backtrace(3) (whose first call loads libgcc_s) so the dump
// itself loads nothing. Call once at startup, before any thread that may need dumping exists.
void InstallStackDumpHandler();

// Writes "thread <tid>:" and the backtrace of every thread of the process to `fd`. Waits at
// most about 100 ms per thread (a thread that cannot run its handler is named and skipped).
// Not reentrant: call from one watchdog at a time.
void DumpAllThreadStacks(int fd);

}  // namespace leash::sidecar
