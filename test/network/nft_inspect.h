// Reading nftables state back in root tests, through the `nft` binary (tests may use it; the
// product never does): a chain's rule counters, a map's elements, whole listings.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "test/fixtures/netns.h"

namespace leash::testing {

// `nft <args...>` inside the namespace; the output, or an error carrying it.
absl::StatusOr<std::string> Nft(const NetNamespace& ns, const std::vector<std::string>& args);

// (packets, bytes) of each `counter` in `nft list chain <family> <table> <chain>`, in order.
absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> ChainCounters(
    const NetNamespace& ns, const std::string& family, const std::string& table,
    const std::string& chain);

// The keys of `<family> <table> agents` (e.g. {1001, 1002}), ascending.
absl::StatusOr<std::vector<uint32_t>> MapKeys(const NetNamespace& ns, const std::string& family,
                                              const std::string& table);

// The agents map's elements as `nft list` prints them, sorted: "1001 : agent_1001",
// "100000-165535 : agent_1001".
absl::StatusOr<std::vector<std::string>> MapEntries(const NetNamespace& ns,
                                                    const std::string& family,
                                                    const std::string& table);

}  // namespace leash::testing
