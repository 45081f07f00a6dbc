// The addresses of this host's own interfaces, in the network namespace of the thread that
// opened the reader (leash-proxy's), for the destination guard: a name must not lead the
// proxy's own connection to a local service.
//
// Kept current without a cost per connection: the list is read with getifaddrs at open and
// again only after the kernel reported an address change on a NETLINK_ROUTE socket subscribed
// to IPv4 and IPv6 address events. Before each answer the socket is drained with one
// non-blocking recv, so a change the kernel made before a decision is in the list that
// decision sees — no polling interval, no window an interface address could slip through —
// and with no change that recv (EAGAIN) is all it costs. A lost notification (the socket's
// queue overflowed: ENOBUFS) also rereads.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/ip_address.h"

namespace leash::proxy {

class HostAddresses {
 public:
  // Subscribes, then reads the list (so no change falls between the two). Errors name the
  // call and the errno.
  static absl::StatusOr<std::unique_ptr<HostAddresses>> Open();
  ~HostAddresses();
  HostAddresses(const HostAddresses&) = delete;
  HostAddresses& operator=(const HostAddresses&) = delete;

  // Every address of every interface now (up or down), rereading first when the kernel reported
  // a change. Not thread-safe: one thread (the proxy's event loop). The span is valid until
  // the next call. Unavailable when a reread fails (the caller refuses what it cannot check).
  absl::StatusOr<absl::Span<const engine::IpAddress>> Current();

  // Rereads so far (the one at open included).
  int reads() const { return reads_; }

 private:
  explicit HostAddresses(int netlink_fd) : netlink_fd_(netlink_fd) {}
  absl::Status Reread();
  // Drains the socket; true when anything (or an overflow) was reported.
  bool Changed();

  const int netlink_fd_;
  std::vector<engine::IpAddress> addresses_;
  bool stale_ = true;
  int reads_ = 0;
};

}  // namespace leash::proxy
