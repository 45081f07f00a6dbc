// Fuzz target: decision-log lines as `leash suggest` reads them (file names and tool inputs in
// them come from agents). Any input, as one line or as several, must be read or skipped —
// never crash or hang — and what is gathered must build a fragment that reads back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_split.h"
#include "cli/suggest_fragment.h"
#include "cli/suggest_log_line.h"
#include "cli/suggest_observations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  leash::cli::ParseLoggedDecision(text).IgnoreError();
  leash::cli::PeekUid(text);
  leash::cli::PeekTs(text);
  leash::cli::ObservationFilter filter;
  filter.uids = {{0, 0xFFFFFFFFu}};
  leash::cli::Observations observations(filter);
  for (absl::string_view line : absl::StrSplit(text, '\n')) observations.AddLine(line);
  // A fragment that does not read back is a bug: abort so the replay fails.
  if (!leash::cli::BuildFragment(observations, {}, "profile:fuzz").ok()) __builtin_trap();
  return 0;
}
