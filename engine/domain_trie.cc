#include "engine/domain_trie.h"

namespace leash::engine {
namespace {

// Splits off the rightmost label of host[0, end): returns it and sets `end` to the position of
// the dot before it, or npos when it was the first label.
absl::string_view PopLabel(absl::string_view host, size_t& end) {
  const size_t dot = end == 0 ? absl::string_view::npos : host.rfind('.', end - 1);
  const size_t start = dot == absl::string_view::npos ? 0 : dot + 1;
  absl::string_view label = host.substr(start, end - start);
  end = dot;
  return label;
}

}  // namespace

void DomainTrie::Add(absl::string_view host, bool wildcard, uint16_t port, int id) {
  Node* node = &root_;
  size_t end = host.size();
  do {
    std::unique_ptr<Node>& child = node->children[PopLabel(host, end)];
    if (!child) child = std::make_unique<Node>();
    node = child.get();
  } while (end != absl::string_view::npos);
  (wildcard ? node->strictly_below : node->self_and_below).push_back(Rule{port, id});
}

int DomainTrie::FirstPortMatch(const std::vector<Rule>& rules, int port) {
  for (const Rule& rule : rules) {
    if (port == kAnyPort || rule.port == 0 || rule.port == port) return rule.id;
  }
  return -1;
}

int DomainTrie::Match(absl::string_view host, uint16_t port) const { return MatchPort(host, port); }

int DomainTrie::MatchOnSomePort(absl::string_view host) const { return MatchPort(host, kAnyPort); }

int DomainTrie::MatchPort(absl::string_view host, int port) const {
  const Node* node = &root_;
  int best = -1;
  size_t end = host.size();
  while (end != absl::string_view::npos) {
    auto it = node->children.find(PopLabel(host, end));
    if (it == node->children.end()) break;
    node = it->second.get();
    if (int id = FirstPortMatch(node->self_and_below, port); id >= 0) best = id;
    const bool more_labels = end != absl::string_view::npos;
    if (more_labels) {
      if (int id = FirstPortMatch(node->strictly_below, port); id >= 0) best = id;
    }
  }
  return best;
}

}  // namespace leash::engine
