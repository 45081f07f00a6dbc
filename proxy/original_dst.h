// Where a redirected connection was going before nftables' redirect rewrote it: the narrow
// interface over getsockopt(SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST), so the decision path is
// unit-tested with a fake (proxy/testing/fake_original_dst.h) and the real call is tested in
// test/proxy/ in a network namespace with real redirect rules.
#pragma once

#include "absl/status/statusor.h"
#include "proxy/socket_address.h"

namespace leash::proxy {

class OriginalDstReader {
 public:
  virtual ~OriginalDstReader() = default;
  // The original destination of the accepted connection `fd`. An error (typically NotFound:
  // no conntrack entry, i.e. the connection was not NATed) means the proxy cannot show the
  // connection was redirected. Thread-safe.
  virtual absl::StatusOr<SocketAddress> Read(int fd) const = 0;
};

// The kernel's answer: SOL_IP/SO_ORIGINAL_DST on an IPv4 socket, SOL_IPV6/IP6T_SO_ORIGINAL_DST
// on an IPv6 one. Errors carry the errno and the peer address.
class KernelOriginalDst final : public OriginalDstReader {
 public:
  absl::StatusOr<SocketAddress> Read(int fd) const override;
};

}  // namespace leash::proxy
