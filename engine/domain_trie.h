// Domain matching without a scan: entries are stored in a trie keyed by labels from the right
// (com -> github -> api), so a lookup costs one hash probe per label of the name being judged,
// whatever the number of entries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace leash::engine {

class DomainTrie {
 public:
  // Adds `host` (normalized: lowercase, no trailing dot). A domain entry matches the host and
  // every name under it; a wildcard entry (*.host) only names strictly under it. `port` 0 is
  // any port. `id` is returned by Match.
  void Add(absl::string_view host, bool wildcard, uint16_t port, int id);

  // Returns the id of the most specific entry matching (`host`, `port`), or -1. `host` must be
  // normalized the same way.
  int Match(absl::string_view host, uint16_t port) const;

  // Returns the id of the most specific entry matching `host` on some port (any entry, whatever
  // port it names), or -1: whether a connection to `host` could match at all.
  int MatchOnSomePort(absl::string_view host) const;

 private:
  struct Rule {
    uint16_t port;
    int id;
  };
  struct Node {
    absl::flat_hash_map<std::string, std::unique_ptr<Node>> children;
    std::vector<Rule> self_and_below;  // github.com
    std::vector<Rule> strictly_below;  // *.github.com
  };
  static int FirstPortMatch(const std::vector<Rule>& rules, int port);
  // kAnyPort: the first rule whatever its port.
  static constexpr int kAnyPort = -1;
  int MatchPort(absl::string_view host, int port) const;

  Node root_;
};

}  // namespace leash::engine
