// The filesystem and command entry grammars: what may stand in filesystem.allow/deny,
// commands.allow/deny and tools.allow/deny, and why an entry that may not can never match.
// Decisions are made on resolved absolute paths, so entries must be absolute and free of
// '.'/'..' segments to ever match one.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::engine {

struct PathEntry {
  enum class Kind {
    kPrefix,  // /home/fido/work: that path and everything under it, on component boundaries.
    kGlob,    // /home/*/.ssh, /srv/**/*.pem: '*' and '?' stay within one component, '**'
              // crosses components; a match also covers everything under the matched path.
  };
  Kind kind = Kind::kPrefix;
  // Normalized: no repeated or trailing '/' (except "/" itself).
  std::string path;
};

struct CommandEntry {
  // True: an absolute path, matched exactly. False: a basename, matched against the
  // basename of the binary being executed.
  bool is_path = false;
  std::string value;
};

// Each returns InvalidArgument whose message is the reason the entry can never match.
absl::StatusOr<PathEntry> ParsePathEntry(absl::string_view entry);
absl::StatusOr<CommandEntry> ParseCommandEntry(absl::string_view entry);
absl::StatusOr<std::string> ParseToolEntry(absl::string_view entry);

// Lexically normalizes an absolute path: collapses repeated '/', drops '.' segments, applies
// '..' segments (never above '/'), drops a trailing '/'. Returns InvalidArgument for a
// relative path.
absl::StatusOr<std::string> NormalizeAbsolutePath(absl::string_view path);

// Whether NormalizeAbsolutePath would return `path` unchanged: absolute, no empty, "." or ".."
// segment, no trailing slash (except "/" itself). The paths the kernel reports are.
bool IsNormalAbsolutePath(absl::string_view path);

// Whether `text` has glob metacharacters ('*', '?', '[').
bool HasGlobMeta(absl::string_view text);

// Translates a glob entry (already validated) into an anchored RE2 pattern that matches the
// glob's paths and everything under them.
std::string GlobToRegex(absl::string_view glob);

}  // namespace leash::engine
