// The profile fragment `leash suggest` prints: per surface observed, `mode: whitelist` and the
// allow list that covers what the subject was seen doing (suggest_collapse.h), each entry with
// a YAML comment giving its count and an example ref; then, as comments, what was refused
// (and so not suggested) and what was left out and why. Every entry is put through the
// engine's inert-entry judgement (the one a profile save applies) and `leash validate`'s
// findings, and the text is read back with the profile loader to be sure it says what the
// fragment holds. Pure.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/suggest_observations.h"
#include "cli/suggest_path_facts.h"
#include "leash/v1/policy.pb.h"

namespace leash::cli {

struct Fragment {
  // What the YAML says, as the profile loader reads it.
  leash::v1::Config config;
  // The fragment's YAML, comments included.
  std::string yaml;
  // Comment lines (without "# ") to print after it: refused, left out, warnings.
  std::vector<std::string> notes;
  // How many entries are in the fragment.
  size_t entries = 0;
};

// `text` fit for one YAML comment line: every control character (a newline above all, which
// would end the comment and let the rest be read as policy) written as the text \xNN. File
// names, refs and reasons in the log are the agent's to choose.
std::string CommentText(absl::string_view text);

// Builds the fragment for `observations` on `surfaces` (empty: all four). `facts` is asked
// about every program before it becomes a commands entry and every folder before files in it
// become one entry (suggest_path_check.h): a loader, or a path another account than root could
// change, is left out and said. `source` names it in
// validate's findings ("profile:<name>"). `audited_beneath`: the surfaces the tiers under the
// profile (the floor, with the global binding folded in) put in audit. A profile inherits the
// audit key it does not write, so each of those the fragment writes also says `audit: false`:
// without it the suggested whitelist, once bound, would still block nothing. One it leaves out
// is said in a note. Internal error if the YAML does not read back to the same Config (a bug,
// never the operator's input).
absl::StatusOr<Fragment> BuildFragment(const Observations& observations,
                                       const PathFacts& facts,
                                       const std::set<leash::v1::Surface>& surfaces,
                                       absl::string_view source,
                                       const std::set<leash::v1::Surface>& audited_beneath = {});

}  // namespace leash::cli
