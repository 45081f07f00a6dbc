// What one subject did, gathered from decision-log lines for `leash suggest`: per surface,
// every distinct thing it was allowed (or, under audit, would have been refused and was not),
// and separately what it was refused. Pure: lines in, counts out; the file reading is
// suggest_inputs.h's.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/uid_ranges.h"
#include "leash/v1/decision.pb.h"

namespace leash::cli {

// One distinct thing seen: how often, one ref to find a line of it by, and (refused) why.
struct Seen {
  uint64_t count = 0;
  std::string example_ref;
  // How many of `count` were would-be blocks under audit (logged `enforced: false`).
  uint64_t audited = 0;
  // The first refusal's reason (refused things only).
  std::string reason;
};

// Keyed by the entry that would allow it, before any collapsing: "api.github.com:443",
// "192.0.2.7/32:443", "[2001:db8::1/128]:443", a path, a binary's path, a tool name.
using SeenMap = std::map<std::string, Seen>;

struct ObservationFilter {
  // The subject's UIDs: its account's own and its subordinate ranges.
  std::vector<engine::UidRange> uids;
  // Empty: every surface.
  std::set<leash::v1::Surface> surfaces;
  // Lines before `since` or at/after `until` are left out; absl::InfinitePast()/Future(): open.
  absl::Time since = absl::InfinitePast();
  absl::Time until = absl::InfiniteFuture();
};

struct ObservationCounts {
  uint64_t lines = 0;            // every line read
  uint64_t subject_lines = 0;    // the subject's, in the window, on a chosen surface
  uint64_t unreadable = 0;       // not a decision record (a torn last line, a foreign line)
  uint64_t suppressed_allows = 0;  // allow lines the writers held back (rate limit), reported
  uint64_t audited = 0;          // would-be blocks (enforced: false)
};

class Observations {
 public:
  explicit Observations(ObservationFilter filter);

  // Takes one line of the log (no '\n'). Lines of other subjects, outside the window, of
  // other surfaces, and records that are not decisions (outcome lines) are counted only.
  void AddLine(absl::string_view line);

  // Allowed, or refused only in the log (audit): what a suggestion must allow.
  const SeenMap& needed(leash::v1::Surface surface) const;
  // Enforced blocks: the subject was refused these, so they are not suggested.
  const SeenMap& refused(leash::v1::Surface surface) const;
  // Directories it listed (allowed, or refused only in the log), kept apart from needed():
  // a listing is not a read of the files under it.
  const SeenMap& listed() const { return listed_; }
  // Programs the log names as an allowed program's ELF interpreter (the loader).
  const std::set<std::string>& interpreters() const { return interpreters_; }
  const ObservationCounts& counts() const { return counts_; }
  const ObservationFilter& filter() const { return filter_; }

 private:
  bool InWindow(absl::string_view ts) const;
  bool ForSubject(uint32_t uid) const;

  ObservationFilter filter_;
  // The window's bounds in the log's own timestamp text, compared as strings when a line's
  // timestamp has that exact form (every writer's), parsed otherwise.
  std::string since_text_;
  std::string until_text_;
  std::map<leash::v1::Surface, SeenMap> needed_;
  std::map<leash::v1::Surface, SeenMap> refused_;
  SeenMap listed_;
  std::set<std::string> interpreters_;
  ObservationCounts counts_;
};

// The entry that allows a network record's target exactly: the name (or the address as a /32
// or /128) with the port. Empty when the record names neither.
std::string ExactNetworkEntry(const leash::v1::Subject& subject);

}  // namespace leash::cli
