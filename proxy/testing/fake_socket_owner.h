// A stateful fake of SocketOwnerLookup for unit tests: the test says, per client address (the
// accepted socket's peer), which account owns it; a client it was told nothing about has an
// unknown owner (NotFound), as the kernel answers for a socket that is already gone.
#pragma once

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "proxy/socket_address.h"
#include "proxy/socket_owner.h"

namespace leash::proxy::testing {

class FakeSocketOwner final : public SocketOwnerLookup {
 public:
  void Set(const SocketAddress& client, SocketOwner owner) {
    absl::MutexLock lock(&mu_);
    owners_[client] = std::move(owner);
  }
  // How many lookups were made (a redirected connection must make none).
  int lookups() const {
    absl::MutexLock lock(&mu_);
    return lookups_;
  }

  absl::StatusOr<SocketOwner> OwnerOfPeer(int fd) const override {
    absl::StatusOr<SocketAddress> peer = PeerAddressOf(fd);
    if (!peer.ok()) return peer.status();
    absl::MutexLock lock(&mu_);
    ++lookups_;
    if (auto it = owners_.find(*peer); it != owners_.end()) return it->second;
    return absl::NotFoundError(
        absl::StrCat("no socket of this host has the connection from ", FormatSocketAddress(*peer)));
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<SocketAddress, SocketOwner> owners_ ABSL_GUARDED_BY(mu_);
  mutable int lookups_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leash::proxy::testing
