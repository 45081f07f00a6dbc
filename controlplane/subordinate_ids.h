// /etc/subuid and /etc/subgid (subuid(5)): the ID ranges an account may map into a user
// namespace through the setuid helpers newuidmap/newgidmap. A process the agent runs under
// one of them is still the agent (engine/uid_ranges.h), so discovery reads them on every pass.
//
// Each line is "owner:first:count"; the owner is a login name or a numeric UID, and a range
// belongs to an account when either matches, as newuidmap checks it. A line this parser cannot
// read is not skipped silently: newuidmap might read it differently, so the owner it names is
// reported (and leashd denies that subject) rather than guessed at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

inline constexpr char kSubuidPath[] = "/etc/subuid";
inline constexpr char kSubgidPath[] = "/etc/subgid";

struct SubordinateIdFile {
  struct Entry {
    std::string owner;
    engine::UidRange range;
  };
  // A line that is neither a comment, blank, nor a readable range: its number and the owner
  // field as written (empty when it has no colon).
  struct BadLine {
    int line = 0;
    std::string owner;
    std::string why;
  };
  std::string path;
  std::vector<Entry> entries;
  std::vector<BadLine> bad_lines;

  // The ranges `name` (or its UID written as a number) holds, merged.
  std::vector<engine::UidRange> RangesOf(absl::string_view name, uint32_t id) const;
  // What stops the account's ranges from being known: one line per bad line naming it.
  std::vector<std::string> ProblemsOf(absl::string_view name, uint32_t id) const;
};

// Parses the text of `path`. Never fails: unreadable lines are kept in bad_lines.
SubordinateIdFile ParseSubordinateIds(absl::string_view text, const std::string& path);

// Reads and parses `path`. A file that does not exist holds no ranges (a host without the
// shadow tools' defaults); any other read failure is an error ("I could not look").
absl::StatusOr<SubordinateIdFile> ReadSubordinateIds(const std::string& path);

}  // namespace leash::controlplane
