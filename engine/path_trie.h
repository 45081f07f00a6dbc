// Path matching without a scan: prefix entries live in a trie of path components, so a lookup
// walks the components of the path being judged once. A glob entry hangs at the node of its
// literal directory part (/srv/*/key.pem at /srv) and is only tried for paths under it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"

namespace leash::engine {

class PathTrie {
 public:
  PathTrie();
  ~PathTrie();
  PathTrie(PathTrie&&) noexcept;
  PathTrie& operator=(PathTrie&&) noexcept;

  // Adds a prefix entry: the path (normalized, absolute) and everything under it, on
  // component boundaries (/home/fido/work does not cover /home/fido/workshop).
  void AddPrefix(absl::string_view path, int id);

  // Adds a glob entry (validated by ParsePathEntry).
  void AddGlob(absl::string_view glob, int id);

  // Returns the id of the most specific matching entry, or -1. `path` must be normalized
  // and absolute.
  int Match(absl::string_view path) const;

 private:
  struct Glob {
    std::unique_ptr<RE2> regex;
    int id;
  };
  struct Node {
    absl::flat_hash_map<std::string, std::unique_ptr<Node>> children;
    int prefix_id = -1;
    std::vector<Glob> globs;
  };
  Node* NodeFor(absl::string_view directory);

  std::unique_ptr<Node> root_;
};

}  // namespace leash::engine
