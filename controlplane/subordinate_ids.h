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
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

inline constexpr char kSubuidPath[] = "/etc/subuid";
inline constexpr char kSubgidPath[] = "/etc/subgid";
inline constexpr char kNsswitchPath[] = "/etc/nsswitch.conf";

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

  // Whether an entry's owner field is the account's (OwnerIsAccount below, as newuidmap decides).
  using OwnerTest = absl::FunctionRef<bool(absl::string_view owner)>;

  // The ranges of the owners `owns` accepts, merged.
  std::vector<engine::UidRange> RangesOf(OwnerTest owns) const;
  // The ranges `name` or its UID written as a number holds (tests, and a first look).
  std::vector<engine::UidRange> RangesOf(absl::string_view name, uint32_t id) const;
  // What stops the account's ranges from being known: one line per bad line it owns.
  std::vector<std::string> ProblemsOf(OwnerTest owns) const;
  // Ranges of other owners that overlap `ranges`: the account and that owner could each act as
  // the other's IDs inside a user namespace (a person's rootless containers would be confined
  // as the agent, the agent could act as them). One line each.
  std::vector<std::string> OverlapsWithOthers(OwnerTest owns,
                                              const std::vector<engine::UidRange>& ranges) const;
};

// How newuidmap (shadow) matches an entry to the account running it: the owner is the account's
// login name as getpwuid gives it, its UID written as a number, or any name whose UID is the
// account's (an alias made with useradd -o). `uid_of_name` looks a name up (nullopt: none).
bool OwnerIsAccount(absl::string_view owner, absl::string_view login_name, uint32_t uid,
                    absl::FunctionRef<std::optional<uint32_t>(absl::string_view)> uid_of_name);

// The `subid:` sources of an nsswitch.conf text other than `files` (empty: the two files are
// the whole truth). newuidmap takes ranges from such a source (sssd, LDAP) that leashd cannot read.
std::vector<std::string> NonFileSubidSources(absl::string_view nsswitch_text);

// Parses the text of `path`. Never fails: unreadable lines are kept in bad_lines.
SubordinateIdFile ParseSubordinateIds(absl::string_view text, const std::string& path);

// Reads and parses `path`. A file that does not exist holds no ranges (a host without the
// shadow tools' defaults); any other read failure is an error ("I could not look").
absl::StatusOr<SubordinateIdFile> ReadSubordinateIds(const std::string& path);

}  // namespace leash::controlplane
