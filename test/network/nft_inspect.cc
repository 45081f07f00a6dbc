#include "test/network/nft_inspect.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"
#include "test/fixtures/subprocess.h"

namespace leash::testing {

absl::StatusOr<std::string> Nft(const NetNamespace& ns, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"nft"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunOk(ns.Exec(argv));
}

absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> ChainCounters(
    const NetNamespace& ns, const std::string& family, const std::string& table,
    const std::string& chain) {
  absl::StatusOr<std::string> listing = Nft(ns, {"list", "chain", family, table, chain});
  if (!listing.ok()) return listing.status();
  static const LazyRE2 kCounter = {R"(counter packets (\d+) bytes (\d+))"};
  std::vector<std::pair<uint64_t, uint64_t>> out;
  re2::StringPiece input(*listing);
  uint64_t packets = 0;
  uint64_t bytes = 0;
  while (RE2::FindAndConsume(&input, *kCounter, &packets, &bytes)) out.push_back({packets, bytes});
  return out;
}

absl::StatusOr<std::vector<uint32_t>> MapKeys(const NetNamespace& ns, const std::string& family,
                                              const std::string& table) {
  absl::StatusOr<std::string> listing = Nft(ns, {"list", "map", family, table, "agents"});
  if (!listing.ok()) return listing.status();
  static const LazyRE2 kElement = {R"((\d+) : jump agent_\d+)"};
  std::vector<uint32_t> out;
  re2::StringPiece input(*listing);
  uint32_t uid = 0;
  while (RE2::FindAndConsume(&input, *kElement, &uid)) out.push_back(uid);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<std::string>> MapEntries(const NetNamespace& ns,
                                                    const std::string& family,
                                                    const std::string& table) {
  absl::StatusOr<std::string> listing = Nft(ns, {"list", "map", family, table, "agents"});
  if (!listing.ok()) return listing.status();
  static const LazyRE2 kElement = {R"(([\d-]+) : jump (agent_\d+))"};
  std::vector<std::string> out;
  re2::StringPiece input(*listing);
  std::string key, chain;
  while (RE2::FindAndConsume(&input, *kElement, &key, &chain)) out.push_back(key + " : " + chain);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace leash::testing
