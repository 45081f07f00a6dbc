// `leash suggest`: a profile fragment from what one agent was seen doing in the decision log,
// and the save and bind lines (with their --ack tokens) that would put it in force. Prints
// only; writes nothing.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leash::cli {

struct SuggestRequest {
  std::string account;
  // --since / --until as given: a duration before `now` ("2h", "90m") or an RFC 3339 time.
  std::string since;
  std::string until;
  // --surface, each "network", "fs", ... or a comma-separated list; empty: all four.
  std::vector<std::string> surfaces;
  // Empty: the floor's logging.decisions, else /var/log/leash/decisions.jsonl.
  std::string log_path;
  // Empty: "<account>-observed".
  std::string profile;
  std::string config_path;
  std::string state_dir;
  std::string subuid_path = "/etc/subuid";
  absl::Time now;
};

// Exit codes as offline.h: 0 with a fragment printed; 1 when nothing was seen to suggest or a
// file could not be read; 2 for a usage error.
int RunSuggestRequest(const SuggestRequest& request, std::ostream& out, std::ostream& err);

// --since/--until: "2h", "90m", "1h30m" (before `now`) or an RFC 3339 time
// ("2026-12-02T06:00:00Z"). InvalidArgument naming the text and both forms.
absl::StatusOr<absl::Time> ParseSuggestTime(absl::string_view text, absl::Time now);

}  // namespace leash::cli
