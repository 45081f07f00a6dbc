// A stateful fake of RouteLookup for unit tests: routes by prefix (the longest matching one
// wins, as the kernel's table does), unicast where none matches, and addresses whose lookup
// fails.
#pragma once

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/ip_address.h"
#include "proxy/route_lookup.h"

namespace leash::proxy::testing {

class FakeRouteLookup : public RouteLookup {
 public:
  void AddRoute(const engine::IpAddress& network, int prefix_len, RouteKind kind) {
    routes_.push_back({network, prefix_len, kind});
  }
  // Every lookup of `address` answers `error`.
  void FailFor(const engine::IpAddress& address, absl::Status error) {
    failures_.emplace_back(address, std::move(error));
  }
  // Every lookup answers `error` (the kernel cannot be asked).
  void FailAll(absl::Status error) { fail_all_ = std::move(error); }

  absl::StatusOr<RouteKind> Lookup(const engine::IpAddress& raw, uint16_t port) override {
    const engine::IpAddress address = engine::UnmapV4(raw);
    looked_up_.emplace_back(address, port);
    if (!fail_all_.ok()) return fail_all_;
    for (const auto& [failing, error] : failures_) {
      if (failing == address) return error;
    }
    const Route* best = nullptr;
    for (const Route& route : routes_) {
      if (route.network.family == address.family &&
          engine::MaskAddress(address, route.prefix_len) == route.network &&
          (best == nullptr || route.prefix_len > best->prefix_len)) {
        best = &route;
      }
    }
    return best == nullptr ? RouteKind::kRemote : best->kind;
  }

  // Every (address, port) asked, in order (IPv4-mapped ones as IPv4).
  const std::vector<std::pair<engine::IpAddress, uint16_t>>& looked_up() const {
    return looked_up_;
  }

 private:
  struct Route {
    engine::IpAddress network;
    int prefix_len;
    RouteKind kind;
  };
  std::vector<Route> routes_;
  std::vector<std::pair<engine::IpAddress, absl::Status>> failures_;
  absl::Status fail_all_;
  std::vector<std::pair<engine::IpAddress, uint16_t>> looked_up_;
};

}  // namespace leash::proxy::testing
