#include "engine/path_trie.h"

#include "absl/strings/str_split.h"
#include "engine/path_entry.h"

namespace leash::engine {

PathTrie::PathTrie() : root_(std::make_unique<Node>()) {}
PathTrie::~PathTrie() = default;
PathTrie::PathTrie(PathTrie&&) noexcept = default;
PathTrie& PathTrie::operator=(PathTrie&&) noexcept = default;

PathTrie::Node* PathTrie::NodeFor(absl::string_view directory, int id) {
  Node* node = root_.get();
  for (absl::string_view component : absl::StrSplit(directory, '/', absl::SkipEmpty())) {
    if (node->below_id < 0) node->below_id = id;
    std::unique_ptr<Node>& child = node->children[component];
    if (!child) child = std::make_unique<Node>();
    node = child.get();
  }
  return node;
}

void PathTrie::AddPrefix(absl::string_view path, int id) {
  Node* node = NodeFor(path, id);
  if (node->prefix_id < 0) node->prefix_id = id;  // the first of duplicate entries names it
}

void PathTrie::AddGlob(absl::string_view glob, int id) {
  const size_t meta = glob.find_first_of("*?[");
  const size_t last_slash = glob.rfind('/', meta);
  Node* node = NodeFor(glob.substr(0, last_slash), id);
  // The glob names something below its literal directory: that directory is an ancestor too.
  if (node->below_id < 0) node->below_id = id;
  RE2::Options options;
  options.set_log_errors(false);
  auto regex = std::make_unique<RE2>(GlobToRegex(glob), options);
  if (!regex->ok()) return;  // ParsePathEntry admits only globs that translate
  node->globs.push_back(Glob{std::move(regex), id});
}

int PathTrie::Match(absl::string_view path) const {
  const re2::StringPiece subject(path.data(), path.size());
  int best = -1;
  const Node* node = root_.get();
  auto visit = [&](const Node* n) {
    if (n->prefix_id >= 0) best = n->prefix_id;
    for (const Glob& glob : n->globs) {
      if (RE2::FullMatch(subject, *glob.regex)) {
        best = glob.id;
        break;
      }
    }
  };
  visit(node);
  for (absl::string_view component : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    auto it = node->children.find(component);
    if (it == node->children.end()) break;
    node = it->second.get();
    visit(node);
  }
  return best;
}

int PathTrie::EntryBelow(absl::string_view path) const {
  const Node* node = root_.get();
  for (absl::string_view component : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    auto it = node->children.find(component);
    if (it == node->children.end()) return -1;
    node = it->second.get();
  }
  return node->below_id;
}

}  // namespace leash::engine
