// Fuzz target: decision-log lines as `leash suggest` reads them (file names and tool inputs in
// them come from agents). Any input, as one line or as several, must be read or skipped —
// never crash or hang — and what is gathered must build a fragment that reads back and keeps
// every rule of cli/testing/suggest_rules.h over its labelled host: no loader, no program or
// folder another account could change, no wildcard from a name the agent sent, nothing left
// out without a note.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/suggest_fragment.h"
#include "cli/suggest_log_line.h"
#include "cli/suggest_observations.h"
#include "cli/testing/suggest_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  leash::cli::ParseLoggedDecision(text).IgnoreError();
  leash::cli::PeekUid(text);
  leash::cli::PeekTs(text);
  leash::cli::ObservationFilter filter;
  filter.uids = {{0, 0xFFFFFFFFu}};
  leash::cli::Observations observations(filter);
  for (absl::string_view line : absl::StrSplit(text, '\n')) observations.AddLine(line);
  // A fragment that does not read back, or an entry that breaks a rule, is a bug: abort so
  // the replay fails.
  absl::StatusOr<leash::cli::Fragment> fragment = leash::cli::BuildFragment(
      observations, leash::cli::testing::Host().facts, {}, "profile:fuzz");
  if (!fragment.ok()) {
    fprintf(stderr, "the fragment was not built: %s\n", fragment.status().ToString().c_str());
    __builtin_trap();
  }
  const std::vector<std::string> broken =
      leash::cli::testing::BrokenRules(*fragment, observations);
  for (const std::string& rule : broken) fprintf(stderr, "broken: %s\n", rule.c_str());
  if (!broken.empty()) __builtin_trap();
  return 0;
}
