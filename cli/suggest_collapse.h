// Collapsing what a subject was seen doing into the fewest entries that still allow nothing
// it did not do beyond what the rules below accept. Pure.
//
// Network names are never collapsed: each name the subject was seen to use is an entry of its
// own, with its count. A name is the agent's to choose (its Host header, SNI or DNS question),
// so a wildcard built from two of them (`a1.herokuapp.com`, `b2.herokuapp.com` into
// `*.herokuapp.com`) would allow every name beside them that whoever owns the parent adds.
// Addresses are each a /32 or /128.
//
// Paths: a folder in which at least kFolderCollapseThreshold distinct things were seen (files,
// or sub-folders already collapsed) becomes the folder's entry, which covers everything under
// it, only when no account but root could have made the names in it (the caller's
// `why_not_folder` says; suggest_path_check.h): files the agent created are names of its
// choosing, and a folder built from them is the same wildcard as a host's. A path seen that is
// itself a folder of other seen paths covers them already. A folder less than two levels deep
// ("/", "/etc", "/home") is never the result of a collapse, and a path that shallow is not
// suggested (see kShallowPathDepth): its entry would be a whole top-level tree.
//
// Commands and tools are never collapsed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "cli/suggest_observations.h"

namespace leash::cli {

inline constexpr size_t kFolderCollapseThreshold = 3;
// A path with fewer components than this is a top-level tree ("/", "/etc"): not suggested.
inline constexpr size_t kShallowPathDepth = 2;

struct SuggestedEntry {
  std::string entry;
  uint64_t count = 0;         // lines behind it
  std::string example_ref;    // one of them
  uint64_t audited = 0;       // of which would-be blocks under audit
  // The distinct things it covers, as seen (sorted); one element when it is exact.
  std::vector<std::string> covers;
  // Left out of the suggestion: why.
  std::string left_out_because;
};

// Network entries from ExactNetworkEntry keys, one per key, sorted. Keys that do not parse
// as network entries are kept as they are (the fragment's entry check then reports them).
std::vector<SuggestedEntry> CollapseNetwork(const SeenMap& seen);

struct PathSuggestion {
  std::vector<SuggestedEntry> entries;
  // Paths not suggested, each with left_out_because: too shallow (kShallowPathDepth), or a
  // name holding glob characters, which as an entry would match other names too.
  std::vector<SuggestedEntry> left_out;
  // Folders that were not made entries because `why_not_folder` refused them, each with why.
  std::vector<std::string> kept_apart;
};
// `why_not_folder(folder)`: "" when the folder may become an entry, else why not.
PathSuggestion CollapsePaths(const SeenMap& seen,
                             absl::FunctionRef<std::string(const std::string&)> why_not_folder);

// Why `path` (with `components` components) is not suggested, or "" when it may be: not
// UTF-8 (the log escapes it as \xNN), a control character, a "." or ".." component or an
// empty one ("//"), glob characters in its name, or too shallow.
std::string UnsuggestablePath(absl::string_view path, size_t components);

// Why the network entry `key` (an ExactNetworkEntry key) is not suggested, or "" when it may
// be: a name the agent sent beginning "*." (its Host header or SNI is its own to write), which
// an entry reads as a wildcard over every name under it; or a name with fewer labels than a
// name may have to stand alone (a bare top-level name, co.uk), whose entry would allow every name
// under it.
std::string UnsuggestableNetworkEntry(absl::string_view key);

// One entry per key, as seen (commands, tools).
std::vector<SuggestedEntry> ExactEntries(const SeenMap& seen);

}  // namespace leash::cli
