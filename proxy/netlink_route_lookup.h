// RouteLookup over rtnetlink: one RTM_GETROUTE per destination the proxy has not asked about
// since the kernel's routing last changed, in the network namespace of the thread that opened
// it (leash-proxy's).
//
// Each lookup carries what the proxy's own connect() carries into the kernel's route lookup —
// the destination, TCP and the port, this process's UID, no mark — so policy routing rules on
// any of them are applied as they would be to the real connection.
//
// Kept cheap without a window: answers are cached per (address, port), and the cache is
// dropped whole whenever the kernel reports a change on a NETLINK_ROUTE socket subscribed to
// route, rule, address, link and nexthop events (an address or a link going down changes
// routes too, and IPv4 does not report every route it flushes with them). Before each answer
// that socket is drained with one non-blocking recv, so a change the kernel made before a
// decision is seen by that decision; a lost notification (ENOBUFS) drops the cache as well.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "proxy/route_lookup.h"

namespace leash::proxy {

class NetlinkRouteLookup : public RouteLookup {
 public:
  // Subscribes to the change events, then opens the request socket (so no change falls
  // between the two). Errors name the call and the errno.
  static absl::StatusOr<std::unique_ptr<NetlinkRouteLookup>> Open();
  ~NetlinkRouteLookup() override;
  NetlinkRouteLookup(const NetlinkRouteLookup&) = delete;
  NetlinkRouteLookup& operator=(const NetlinkRouteLookup&) = delete;

  absl::StatusOr<RouteKind> Lookup(const engine::IpAddress& address, uint16_t port) override;

  // Questions put to the kernel so far (cache misses), and times the cache was dropped.
  int kernel_lookups() const { return kernel_lookups_; }
  int invalidations() const { return invalidations_; }

 private:
  NetlinkRouteLookup(int events_fd, int request_fd)
      : events_fd_(events_fd), request_fd_(request_fd) {}
  // Drains the event socket; true when anything (or an overflow) was reported.
  bool Changed();
  absl::StatusOr<RouteKind> Ask(const engine::IpAddress& address, uint16_t port);

  struct Key {
    engine::IpAddress address;
    uint16_t port;
    bool operator==(const Key& other) const {
      return address == other.address && port == other.port;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Key& key) {
      return H::combine(std::move(h), key.address.family, key.address.bytes, key.port);
    }
  };

  const int events_fd_;
  const int request_fd_;
  uint32_t sequence_ = 0;
  absl::flat_hash_map<Key, RouteKind> cache_;
  int kernel_lookups_ = 0;
  int invalidations_ = 0;
};

}  // namespace leash::proxy
