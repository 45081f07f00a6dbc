// The one command-line parser of Leash's programs: absl flags, written with dashes
// (--decision-log-fd=3, --decision-log-fd 3; --standby / --nostandby for a bool), and --help on
// every program. Unlike absl::ParseCommandLine alone, a bad flag is an error returned to the
// caller (exit kExitUsage, exit_codes.h), never an exit(1) from inside the parser.
//
// Beyond absl's grammar a program may ask, through CommandLineRules, for one-letter names
// (-c for --config), a default read from the environment, a check of every value as it is read,
// and a flag given many times (a RepeatedFlag).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::base {

// The type of a flag that may be given many times: every value kept whole, in the order given
// (--ack a --ack b,c is {"a", "b,c"}). absl's own std::vector<std::string> flag splits one value
// on commas and keeps only the last occurrence, so it cannot carry a value holding a comma.
struct RepeatedFlag {
  std::vector<std::string> values;
};
// The text form, only ParseCommandLine writes it: each value C-escaped and ended by a newline.
bool AbslParseFlag(absl::string_view text, RepeatedFlag* flag, std::string* error);
std::string AbslUnparseFlag(const RepeatedFlag& flag);

// What a program's command line takes beyond absl's grammar. Flags are named as declared
// (underscores).
struct CommandLineRules {
  // Named in the error for an unknown flag ("see `leash --help`"); not named when empty.
  std::string program;
  // One-letter names: {'c', "config"} lets -c /x (and -c=/x) stand for --config=/x.
  // -h is --help in every program.
  std::map<char, std::string> short_names;
  // A flag not given takes the value of its environment variable when that is set and not
  // empty, and then counts as given ({"config", "LEASH_CONFIG"}).
  std::map<std::string, std::string> env_defaults;
  // Reads the environment for env_defaults; std::getenv when empty (a test hands its own).
  std::function<const char*(const char*)> getenv;
  // Called with each value as it is read, in order: a positional argument (flag "") or a
  // non-bool flag's value (flag: its name). An error ends the parse with it.
  std::function<absl::Status(absl::string_view flag, absl::string_view value)> check_value;
};

struct CommandLine {
  // The arguments that are not flags, in order (everything after "--" included).
  std::vector<std::string> positional;
  // --help, -h or -help was given.
  bool help = false;
  // The flags the command line gave (or their environment variable, see env_defaults), as
  // declared; a flag not among them holds its default.
  std::set<std::string> given;

  bool Given(absl::string_view flag) const { return given.count(std::string(flag)) > 0; }
};

// Sets the program's absl flags from `args` (argv without argv[0]); every flag not given is
// set back to its default first, so a second call does not see the first one's values. A flag
// given twice keeps its last value, a RepeatedFlag every one. InvalidArgument naming the flag
// for an unknown flag, a flag without its value, or a value its type does not take (or that
// rules.check_value refuses). Not thread-safe (absl flags are process-wide): call from main,
// or tests.
absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args,
                                             const CommandLineRules& rules = {});

// `usage`, then every flag of the program with its help and default, dashed (and its one-letter
// name and environment variable from `rules`).
std::string FlagsHelp(absl::string_view usage, const CommandLineRules& rules = {});

// For main(): parses argv[1..] under `rules`. --help prints FlagsHelp(usage, rules) to stdout
// and returns kExitOk; a bad flag prints "<program>: <why>" and a pointer to --help to stderr
// and returns kExitUsage. -1: go on, with the positional arguments in `positional` (may be null
// when the program takes none: then one is a usage error).
int ParseCommandLineForMain(int argc, char** argv, absl::string_view program,
                            absl::string_view usage, std::vector<std::string>* positional,
                            const CommandLineRules& rules = {});

}  // namespace leash::base
