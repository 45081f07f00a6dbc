// The one command-line parser of Leash's programs: absl flags, written with dashes
// (--decision-log-fd=3, --decision-log-fd 3; --standby / --nostandby for a bool), and --help on
// every program. Unlike absl::ParseCommandLine alone, a bad flag is an error returned to the
// caller (exit kExitUsage, exit_codes.h), never an exit(1) from inside the parser.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::base {

struct CommandLine {
  // The arguments that are not flags, in order (everything after "--" included).
  std::vector<std::string> positional;
  // --help, -h or -help was given.
  bool help = false;
};

// Sets the program's absl flags from `args` (argv without argv[0]); every flag not given is
// set back to its default first, so a second call does not see the first one's values.
// InvalidArgument naming the flag for an unknown flag, a flag without its value, or a value its
// type does not take. Not thread-safe (absl flags are process-wide): call from main, or tests.
absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// `usage`, then every flag of the program with its help and default, dashed.
std::string FlagsHelp(absl::string_view usage);

// For main(): parses argv[1..]. --help prints FlagsHelp(usage) to stdout and returns kExitOk;
// a bad flag prints "<program>: <why>" and a pointer to --help to stderr and returns
// kExitUsage. -1: go on, with the positional arguments in `positional` (may be null when the
// program takes none: then one is a usage error).
int ParseCommandLineForMain(int argc, char** argv, absl::string_view program,
                            absl::string_view usage, std::vector<std::string>* positional);

}  // namespace leash::base
