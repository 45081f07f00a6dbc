// The command line of `leash` as its commands see it: the flags (absl flags, declared in
// args.cc and read by base/command_line, the parser every Leash program shares), the
// subcommand and its words. Every command's flags are described in usage.cc; an unknown flag is
// a usage error (exit 2), never ignored.
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
  // Flags with values that only some commands take (--from, --user, --tail, --inputs, ...),
  // named without dashes, each as given (a repeatable one, --surface, once per value given).
  std::vector<std::pair<std::string, std::string>> options;
  bool follow = false;
  // teardown: release only when systemd says the stop was deliberate (ExecStopPost).
  bool unless_failed = false;

  // The value of option `name` (without dashes), or `fallback`.
  std::string Option(const std::string& name, const std::string& fallback = "") const;
  bool HasOption(const std::string& name) const;
};

// Parses argv; `env_config` is $LEASH_CONFIG (may be null). InvalidArgument (exit 2) for an
// unknown flag, a flag missing its value, or a word or value leashd would receive that is not
// UTF-8.
absl::StatusOr<Args> ParseArgs(int argc, const char* const* argv, const char* env_config);

// `leash --help`, `leash <command> --help`: usage.cc's text for `command`; the overview (for
// no command or one usage.cc does not know) ends with every flag and its help.
std::string HelpText(const std::string& command);

}  // namespace leash::cli
