// leash-proxy as the tests and benchmarks run it: the binary's own RunProxyMain (flags,
// PolicyStream subscriber, listeners, event loop) with a synchronous decision-log writer in
// place of AsyncDecisionLog until that lands. Same flags as //proxy:leash-proxy.
#include "proxy/proxy_main.h"
#include "test/proxy/sync_decision_log.h"

int main(int argc, char** argv) {
  return leash::proxy::RunProxyMain(argc, argv, [](int fd) {
    auto log = std::make_unique<leash::testing::SyncDecisionLog>(fd);
    leash::testing::SyncDecisionLog* raw = log.get();
    return leash::proxy::SinkHandle{std::move(log), [raw] { return raw->lost(); }};
  });
}
