// One leashd per run folder and per network namespace. leashd holds two exclusive flocks, each
// with its pid written in it, from before it touches any chain, socket or port until it ends
// (the kernel drops them however it ends):
//   - <run_dir>/leashd.lock: its sockets, pidfile and sidecars live in the run folder;
//   - /run/leash-netns/net-<inode of /proc/self/ns/net>.lock: the nftables tables and the
//     proxy ports 18000-18999 belong to the network namespace, whatever folders a leashd uses.
//     A second leashd there on other folders would re-apply the same UIDs' chains, and its
//     stop would release them under the first, leaving the first's agents unconfined.
// A second leashd refuses to start. `leash teardown` takes the same locks for as long as it
// releases chains, so it never releases them under a running leashd and no leashd starts while
// it does. The lock files are left in place when released (unlinking a lock file races with a
// process that has just opened it); /run is emptied at boot.
//
// The namespace's lock file lives under /run, so two leashds that share a network namespace but
// see different /run folders (a container with the host's network and its own /run) do not see
// each other's lock. Not handled: such a setup is refused nowhere.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/file_lock.h"

namespace leash::controlplane {

inline constexpr char kInstanceLockName[] = "leashd.lock";
inline constexpr char kPidfileName[] = "leashd.pid";
// Root-owned, 0755, made if missing.
inline constexpr char kNetnsLockDir[] = "/run/leash-netns";

// What taking the locks came to. Either every lock asked for is held (acquired()), or one is
// held by another process and `held_by` says who, for the caller to finish with its advice:
//   "a leashd is running on <run_dir> (pid N), or `leash teardown` is releasing its chains"
//   "a leashd is running in this network namespace (pid N, lock <path>), or `leash
//    teardown` is releasing its chains"
// An error (the StatusOr's) means it could not tell: a folder that is not one, a lock folder
// others can write, an unreadable namespace.
struct InstanceLock {
  std::optional<base::FileLock> run_dir;            // absent from LockNetworkNamespace
  std::optional<base::FileLock> network_namespace;
  std::string held_by;
  bool acquired() const { return held_by.empty(); }
};

// Takes both locks and writes this process's pid in them, waiting up to `wait` for a holder
// that lets go (a `leash teardown` finishing).
absl::StatusOr<InstanceLock> LockInstance(const std::string& run_dir, absl::Duration wait,
                                          const std::string& netns_lock_dir = kNetnsLockDir);

// The network namespace's lock alone, for a teardown whose run folder does not exist.
absl::StatusOr<InstanceLock> LockNetworkNamespace(absl::Duration wait,
                                                  const std::string& netns_lock_dir = kNetnsLockDir);

}  // namespace leash::controlplane
