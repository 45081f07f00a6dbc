// A stateful fake of OriginalDstReader for unit tests: the test says, per client address (the
// accepted socket's peer), what the "kernel" reports as the original destination; a peer it
// was told nothing about reads as the address it connected to, as the kernel reports a
// connection it tracked but did not redirect (a direct connection to the listener).
#pragma once

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "proxy/original_dst.h"

namespace leash::proxy::testing {

class FakeOriginalDst final : public OriginalDstReader {
 public:
  // Connections from `client` report `original` (a redirected connection).
  void Set(const SocketAddress& client, const SocketAddress& original) {
    absl::MutexLock lock(&mu_);
    by_client_[client] = original;
  }
  // Connections from `client` fail to report (e.g. a conntrack entry gone).
  void SetError(const SocketAddress& client, absl::Status error) {
    absl::MutexLock lock(&mu_);
    errors_[client] = std::move(error);
  }

  absl::StatusOr<SocketAddress> Read(int fd) const override {
    absl::StatusOr<SocketAddress> peer = PeerAddressOf(fd);
    if (!peer.ok()) return peer.status();
    {
      absl::MutexLock lock(&mu_);
      if (auto it = errors_.find(*peer); it != errors_.end()) return it->second;
      if (auto it = by_client_.find(*peer); it != by_client_.end()) return it->second;
    }
    // Not redirected: a direct connection reports the address it reached (the listener's).
    return LocalAddressOf(fd);
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<SocketAddress, SocketAddress> by_client_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<SocketAddress, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::proxy::testing
