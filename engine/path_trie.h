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

  // The id of an entry that lies strictly below `path` (a prefix entry under it, or a glob
  // whose literal directory is `path` or under it), or -1: `path` is then an ancestor of
  // something an entry names. `path` must be normalized and absolute.
  int EntryBelow(absl::string_view path) const;

 private:
  struct Glob {
    std::unique_ptr<RE2> regex;
    int id;
  };
  struct Node {
    absl::flat_hash_map<std::string, std::unique_ptr<Node>> children;
    int prefix_id = -1;
    // The first entry added strictly below this node (a glob hanging here counts).
    int below_id = -1;
    std::vector<Glob> globs;
  };
  // The node for `directory`, created as needed; every node above it records `id` as an
  // entry below it.
  Node* NodeFor(absl::string_view directory, int id);

  std::unique_ptr<Node> root_;
};

}  // namespace leash::engine
