// Command-line parsing for `leash`: global flags, the subcommand and its words and flags.
// Small on purpose: every command's flags are listed in usage.cc, and unknown flags are usage
// errors (exit 2), never ignored.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leash::cli {

struct Args {
  // --config / -c, else $LEASH_CONFIG, else /etc/leash/leash.yaml.
  std::string config_path;
  // Whether the operator named it (--config, -c or LEASH_CONFIG) rather than taking the default.
  bool config_named = false;
  bool json = false;
  bool help = false;
  bool offline = false;
  bool no_reconcile = false;
  std::vector<std::string> acks;
  // The subcommand words and positional arguments, in order ("check", "network", "x:443").
  std::vector<std::string> words;
  // Flags with values that only some commands take (--from, --user, --tail, --inputs, ...).
  std::vector<std::pair<std::string, std::string>> options;
  bool follow = false;
  // teardown: release only when systemd says the stop was deliberate (ExecStopPost).
  bool unless_failed = false;

  // The value of option `name` (without dashes), or `fallback`.
  std::string Option(const std::string& name, const std::string& fallback = "") const;
  bool HasOption(const std::string& name) const;
};

// Parses argv. InvalidArgument (exit 2) for an unknown flag or a flag missing its value.
absl::StatusOr<Args> ParseArgs(int argc, const char* const* argv, const char* env_config);

}  // namespace leash::cli
