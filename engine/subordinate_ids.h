// /etc/subuid and /etc/subgid (subuid(5)): the ID ranges an account may map into a user
// namespace through the setuid helpers newuidmap/newgidmap. A process the agent runs under
// one of them is still the agent (engine/uid_ranges.h): leashd confines what they grant, and
// leash-fswatch holds an agent's open of them until that is in force (fswatch/subid_hold.h).
//
// The files are read the way newuidmap reads them (shadow-utils 4.13, Debian 12's), so that
// whatever it would grant is confined and nothing it would grant is missed:
//  - lines as its reader splits them: on '\n', a line cut at its first NUL byte (the rest
//    joined to what follows), a line of 1024 bytes or more ignored, a line whose owner starts
//    with '+' or '-' ignored (NIS);
//  - the first three ':'-separated fields, each non-empty; any field after the third ignored;
//    no comments ('#' starts an owner like any other byte);
//  - first and count as strtoul(text, &end, 0) with nothing after the number: leading
//    whitespace, a sign (a minus negates modulo 2^64), "0x" for hex, a leading 0 for octal;
//  - the range is first..first+count-1 in 64-bit unsigned arithmetic, as its find_range
//    computes it, so a count of 0 at first 0 wraps to every ID. Only the part at or below the
//    last 32-bit ID matters (newuidmap maps no ID above it).
// Later shadow releases refuse more lines (a fourth field, numbers past 32 bits) and accept no
// line 4.13 refuses, so this reading is the widest.
//
// What "could" be read differently is taken the wider way: a byte of 0x80 or above before a
// number may be whitespace in a single-byte locale newuidmap was run under, so it is skipped
// like whitespace and the range counted. Every line that grants nothing under newuidmap is
// kept (with why), for `leash validate` to show.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "engine/uid_ranges.h"

namespace leash::engine {

// Where newuidmap and newgidmap read them (compiled into shadow-utils).
inline constexpr char kSubuidPath[] = "/etc/subuid";
inline constexpr char kSubgidPath[] = "/etc/subgid";

struct SubordinateIdFile {
  struct Entry {
    int line = 0;
    std::string owner;
    UidRange range;
    // Empty when written as useradd writes it ("owner:first:count", plain decimal); else how
    // newuidmap reads what is written (hex, octal, a sign, a fourth field, a wrap).
    std::string reading;
  };
  // A line that newuidmap reads as granting nothing: its number, the owner field as written
  // (empty when it has no colon), and why.
  struct IgnoredLine {
    int line = 0;
    std::string owner;
    std::string why;
  };
  std::string path;
  std::vector<Entry> entries;
  std::vector<IgnoredLine> ignored;

  // Whether an entry's owner field is the account's (OwnerIsAccount below, as newuidmap decides).
  using OwnerTest = absl::FunctionRef<bool(absl::string_view owner)>;

  // The ranges of the owners `owns` accepts, merged.
  std::vector<UidRange> RangesOf(OwnerTest owns) const;
  // The ranges `name` or its UID written as a number holds (tests, and a first look).
  std::vector<UidRange> RangesOf(absl::string_view name, uint32_t id) const;
  // For `leash validate`: one line per entry of the account's written in a form other than
  // useradd's (what newuidmap reads it as), and per line naming it that newuidmap ignores.
  std::vector<std::string> NotesOf(OwnerTest owns) const;
  // Ranges of other owners that overlap `ranges`: the account and that owner could each act as
  // the other's IDs inside a user namespace (a person's rootless containers would be confined
  // as the agent, the agent could act as them). One line each.
  std::vector<std::string> OverlapsWithOthers(OwnerTest owns,
                                              const std::vector<UidRange>& ranges) const;
};

// How newuidmap (shadow) matches an entry to the account running it: the owner is the account's
// login name as getpwuid gives it, its UID written as a number, or any name whose UID is the
// account's (an alias made with useradd -o). `uid_of_name` looks a name up (nullopt: none).
bool OwnerIsAccount(absl::string_view owner, absl::string_view login_name, uint32_t uid,
                    absl::FunctionRef<std::optional<uint32_t>(absl::string_view)> uid_of_name);

// The `subid:` sources of an nsswitch.conf text other than `files` (empty: the two files are
// the whole truth). newuidmap takes ranges from such a source (sssd, LDAP) that leashd cannot read.
std::vector<std::string> NonFileSubidSources(absl::string_view nsswitch_text);

// shadow's getulong: strtoul(text, &end, 0) over the whole text, as read above (nullopt
// where getulong fails). Exposed for its table test.
std::optional<uint64_t> ReadSubidNumber(absl::string_view text);

// Parses the text of `path`. Never fails: what newuidmap ignores is kept in `ignored`.
SubordinateIdFile ParseSubordinateIds(absl::string_view text, const std::string& path);

}  // namespace leash::engine
