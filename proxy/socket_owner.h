// Who made a connection that reached a proxy listener directly (docs/ARCHITECTURE.md, rule
// N6): a peer with no leash rules (root, another local service) connecting to a listener
// directly would otherwise be recorded as that subject's own egress — so such a connection is
// logged under the account that owns the connecting socket, never the listener's subject.
//
// The narrow interface over the kernel's answer (NETLINK_SOCK_DIAG: a loopback TCP socket's
// owner UID, found by its 4-tuple), so the refusal path is unit-tested with a fake
// (proxy/testing/fake_socket_owner.h) and the real lookup is tested as root in test/proxy/
// with processes of other accounts. Only the refusal of a direct connection asks it: an
// ordinary redirected connection never pays for a lookup.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace leash::proxy {

struct SocketOwner {
  uint32_t uid = 0;
  // The account of `uid` in the account database; empty when no account has that UID (a
  // subordinate UID of some account's user namespace, say).
  std::string account;
};

class SocketOwnerLookup {
 public:
  virtual ~SocketOwnerLookup() = default;
  // The owner of the socket at the other end of the accepted connection `fd` (a socket of this
  // host, in this network namespace). NotFound when no live socket of this host has that
  // 4-tuple (the peer is remote, or it already closed); other errors name the netlink failure.
  // Never guesses: a caller that gets an error must say the owner is unknown. Thread-safe.
  virtual absl::StatusOr<SocketOwner> OwnerOfPeer(int fd) const = 0;
};

// The kernel's answer: one SOCK_DIAG_BY_FAMILY exact-socket request (inet_diag_req_v2 with the
// peer's 4-tuple) on a fresh NETLINK_SOCK_DIAG socket, and the account database for the name.
class KernelSocketOwner final : public SocketOwnerLookup {
 public:
  absl::StatusOr<SocketOwner> OwnerOfPeer(int fd) const override;
};

}  // namespace leash::proxy
