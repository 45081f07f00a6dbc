#include "cli/suggest_collapse.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/network_entry.h"
#include "engine/path_entry.h"

namespace leash::cli {
namespace {

// A tree of name labels or path components; a node holds what was seen at exactly it.
struct Node {
  const Seen* seen = nullptr;
  std::string seen_key;
  std::map<std::string, std::unique_ptr<Node>> children;
};

// Adds what was seen as `key` at the node `parts` lead to from `root`.
void Insert(Node& root, const std::vector<std::string>& parts, const std::string& key,
            const Seen& seen) {
  Node* node = &root;
  for (const std::string& part : parts) {
    std::unique_ptr<Node>& child = node->children[part];
    if (!child) child = std::make_unique<Node>();
    node = child.get();
  }
  node->seen = &seen;
  node->seen_key = key;
}

SuggestedEntry FromSeen(const std::string& entry, const std::string& key, const Seen& seen) {
  SuggestedEntry out;
  out.entry = entry;
  out.count = seen.count;
  out.example_ref = seen.example_ref;
  out.audited = seen.audited;
  out.covers = {key};
  return out;
}

// Folds `parts` into one entry named `entry`.
SuggestedEntry Merge(std::string entry, std::vector<SuggestedEntry> parts) {
  SuggestedEntry out;
  out.entry = std::move(entry);
  for (SuggestedEntry& part : parts) {
    if (out.example_ref.empty()) out.example_ref = part.example_ref;
    out.count += part.count;
    out.audited += part.audited;
    for (std::string& key : part.covers) out.covers.push_back(std::move(key));
  }
  std::sort(out.covers.begin(), out.covers.end());
  return out;
}

// The entries for the subtree at `node`, whose own name (a path, or a host name) is `name`. `collapse_as(name, self_seen)` is the entry a collapse there writes, or "" when
// no collapse may happen at this node; a node gathering `threshold` branches collapses.
// `child_name(name, label)` names a child.
template <typename CollapseAs, typename ChildName>
std::vector<SuggestedEntry> Walk(const Node& node, const std::string& name, size_t threshold,
                                 const CollapseAs& collapse_as, const ChildName& child_name) {
  std::vector<SuggestedEntry> below;
  size_t branches = 0;
  for (const auto& [label, child] : node.children) {
    std::vector<SuggestedEntry> sub =
        Walk(*child, child_name(name, label), threshold, collapse_as, child_name);
    if (!sub.empty()) ++branches;
    for (SuggestedEntry& entry : sub) below.push_back(std::move(entry));
  }
  if (node.seen != nullptr) {
    // Seen itself: a name entry covers every name under it, a path entry every path under it.
    const std::string entry = collapse_as(name, /*self_seen=*/true);
    if (!entry.empty()) {
      below.push_back(FromSeen(entry, node.seen_key, *node.seen));
      if (below.size() == 1) return below;
      return {Merge(entry, std::move(below))};
    }
    below.push_back(FromSeen(node.seen_key, node.seen_key, *node.seen));
    return below;
  }
  if (branches >= threshold) {
    const std::string entry = collapse_as(name, /*self_seen=*/false);
    if (!entry.empty()) return {Merge(entry, std::move(below))};
  }
  return below;
}

std::vector<SuggestedEntry> SortedByEntry(std::vector<SuggestedEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const SuggestedEntry& a, const SuggestedEntry& b) { return a.entry < b.entry; });
  return entries;
}

// The fewest labels a suggested name may have: two, three under a two-letter (country code)
// top-level name, which no public-suffix list is at hand offline to tell apart.
size_t MinParentLabels(absl::string_view tld) { return tld.size() == 2 ? 3 : 2; }

}  // namespace

std::string UnsuggestablePath(absl::string_view path, size_t components) {
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "its name holds a control character (a newline, ...); allow its folder by hand "
             "if it is meant";
    }
  }
  if (absl::StrContains(path, "\\x")) {
    return "its name is not UTF-8 and the log shows it escaped (\\xNN), so no entry written "
           "from the log names it; allow its folder by hand if it is meant";
  }
  if (absl::StrContains(absl::StrCat(path, "/"), "/./") ||
      absl::StrContains(absl::StrCat(path, "/"), "/../") || absl::StrContains(path, "//") ||
      (path.size() > 1 && path.back() == '/')) {
    return "its name holds '.', '..', '//' or a trailing '/', so it is not the path the kernel "
           "reports for any file, and an entry of it names no file or another one";
  }
  if (engine::HasGlobMeta(path)) {
    return "its name holds '*', '?' or '[', which an entry reads as a pattern matching other "
           "names too; allow its folder by hand if it is meant";
  }
  if (components < kShallowPathDepth) {
    return "a top-level folder: its entry would allow the whole tree under it; add it by hand "
           "if that is meant";
  }
  return "";
}

std::string UnsuggestableNetworkEntry(absl::string_view key) {
  absl::StatusOr<engine::NetworkEntry> parsed = engine::ParseNetworkEntry(key);
  if (!parsed.ok()) return "";  // the fragment's entry check reports it
  if (parsed->kind == engine::NetworkEntry::Kind::kWildcard) {
    return "the name it sent begins with '*.', which an entry reads as a wildcard matching "
           "every name under it; allow the names it meant by hand";
  }
  if (parsed->kind != engine::NetworkEntry::Kind::kDomain) return "";
  const std::vector<absl::string_view> labels = absl::StrSplit(parsed->host, '.');
  if (labels.size() < MinParentLabels(labels.back())) {
    return "a top-level name (or a country code's second level, like co.uk): its entry would "
           "allow every name under it; add it by hand if that is meant";
  }
  return "";
}

std::vector<SuggestedEntry> CollapseNetwork(const SeenMap& seen) {
  // Every name is the agent's own to send (its Host header, SNI or DNS question): a wildcard
  // built from two of them would allow every name its owner may add beside them.
  return SortedByEntry(ExactEntries(seen));
}

PathSuggestion CollapsePaths(const SeenMap& seen,
                             absl::FunctionRef<std::string(const std::string&)> why_not_folder) {
  PathSuggestion out;
  Node root;
  for (const auto& [path, sighting] : seen) {
    const std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
    if (path.empty() || path.front() != '/') {
      // Never logged by the watcher: kept for the entry check to report.
      out.entries.push_back(FromSeen(path, path, sighting));
      continue;
    }
    if (std::string why = UnsuggestablePath(path, parts.size()); !why.empty()) {
      SuggestedEntry left = FromSeen(path, path, sighting);
      left.left_out_because = std::move(why);
      out.left_out.push_back(std::move(left));
      continue;
    }
    Insert(root, parts, path, sighting);
  }
  const auto child_name = [](const std::string& name, const std::string& part) {
    return absl::StrCat(name == "/" ? "" : name, "/", part);
  };
  // Depth counts components: "/a" is 1, "/a/b" is 2.
  for (const auto& [part, child] : root.children) {
    // A path entry covers everything under it whether the folder itself was seen or not.
    const auto collapse_as = [&](const std::string& name, bool self_seen) -> std::string {
      const size_t depth = std::count(name.begin(), name.end(), '/');
      if (depth < kShallowPathDepth) return "";
      // A path seen itself is its own entry; only a folder built from what is under it must
      // be one the agent could not have filled with names of its choosing.
      if (self_seen) return name;
      if (std::string why = why_not_folder(name); !why.empty()) {
        out.kept_apart.push_back(absl::StrCat(
            "the paths under ", name, " stay separate entries, not that folder: ", why));
        return "";
      }
      return name;
    };
    for (SuggestedEntry& entry : Walk(*child, absl::StrCat("/", part),
                                      kFolderCollapseThreshold, collapse_as, child_name)) {
      out.entries.push_back(std::move(entry));
    }
  }
  out.entries = SortedByEntry(std::move(out.entries));
  return out;
}

std::vector<SuggestedEntry> ExactEntries(const SeenMap& seen) {
  std::vector<SuggestedEntry> out;
  for (const auto& [key, sighting] : seen) out.push_back(FromSeen(key, key, sighting));
  return out;
}

}  // namespace leash::cli
