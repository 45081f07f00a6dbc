// What the destination guard adds to a connection decided on a name: the host-address check
// (one non-blocking recv on the address-event socket when nothing changed), the classification
// of one resolved address, and the kernel's route to it — answered from the cache (one
// non-blocking recv on the route-event socket and a hash lookup) and, for comparison, asked of
// the kernel every time (one RTM_GETROUTE round trip, what a lookup per connect would cost).
// Run: bazel run -c opt //proxy:destination_guard_benchmark
#include <vector>

#include "benchmark/benchmark.h"
#include "proxy/destination_guard.h"
#include "proxy/host_addresses.h"
#include "proxy/netlink_route_lookup.h"

namespace leash::proxy {
namespace {

std::vector<engine::IpAddress> SomeHostAddresses() {
  std::vector<engine::IpAddress> host;
  for (const char* text : {"127.0.0.1", "::1", "192.0.2.10", "2001:db8::10", "10.0.0.5",
                           "fe80::1", "172.17.0.1", "203.0.113.5"}) {
    host.push_back(*engine::ParseIpAddress(text));
  }
  return host;
}

void BM_GuardPublicV4(benchmark::State& state) {
  const std::vector<engine::IpAddress> host = SomeHostAddresses();
  const engine::IpAddress address = *engine::ParseIpAddress("192.0.2.11");
  for (auto _ : state) {
    benchmark::DoNotOptimize(GuardNameDestination(address, false, host));
  }
}
BENCHMARK(BM_GuardPublicV4);

void BM_GuardPublicV6(benchmark::State& state) {
  const std::vector<engine::IpAddress> host = SomeHostAddresses();
  const engine::IpAddress address = *engine::ParseIpAddress("2001:db8::11");
  for (auto _ : state) {
    benchmark::DoNotOptimize(GuardNameDestination(address, false, host));
  }
}
BENCHMARK(BM_GuardPublicV6);

void BM_HostAddressesCurrentUnchanged(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<HostAddresses>> host = HostAddresses::Open();
  if (!host.ok()) {
    state.SkipWithError(std::string(host.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize((*host)->Current());
  }
}
BENCHMARK(BM_HostAddressesCurrentUnchanged);

void BM_RouteLookupCached(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<NetlinkRouteLookup>> routes = NetlinkRouteLookup::Open();
  if (!routes.ok()) {
    state.SkipWithError(std::string(routes.status().message()).c_str());
    return;
  }
  const engine::IpAddress address = *engine::ParseIpAddress(state.range(0) == 4 ? "127.0.0.1" : "::1");
  for (auto _ : state) {
    benchmark::DoNotOptimize((*routes)->Lookup(address, 443));
  }
  state.counters["kernel_lookups"] = (*routes)->kernel_lookups();
}
BENCHMARK(BM_RouteLookupCached)->Arg(4)->Arg(6);

// A different port each time: every lookup misses the cache and asks the kernel.
void BM_RouteLookupKernelEveryTime(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<NetlinkRouteLookup>> routes = NetlinkRouteLookup::Open();
  if (!routes.ok()) {
    state.SkipWithError(std::string(routes.status().message()).c_str());
    return;
  }
  const engine::IpAddress address = *engine::ParseIpAddress(state.range(0) == 4 ? "127.0.0.1" : "::1");
  uint16_t port = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize((*routes)->Lookup(address, port));
    port = port == 65535 ? 1 : port + 1;
  }
  state.counters["kernel_lookups"] = (*routes)->kernel_lookups();
}
BENCHMARK(BM_RouteLookupKernelEveryTime)->Arg(4)->Arg(6);

}  // namespace
}  // namespace leash::proxy

BENCHMARK_MAIN();
