// leash: the operator's command line.
#include <cstdlib>
#include <iostream>

#include "cli/args.h"
#include "cli/offline.h"
#include "cli/usage.h"

int main(int argc, char** argv) {
  absl::StatusOr<leash::cli::Args> args =
      leash::cli::ParseArgs(argc, argv, std::getenv("LEASH_CONFIG"));
  if (!args.ok()) {
    std::cerr << "leash: " << args.status().message() << "\n";
    return leash::cli::kExitUsage;
  }
  if (args->help || args->words.empty() || args->words[0] == "help") {
    std::cout << leash::cli::Usage(args->words.empty() || args->words[0] == "help"
                                       ? ""
                                       : args->words[0]);
    return args->help || !args->words.empty() ? leash::cli::kExitOk : leash::cli::kExitUsage;
  }
  const std::string& command = args->words[0];
  if (command == "validate") return leash::cli::ValidateOffline(*args, std::cout, std::cerr);
  if (command == "check") return leash::cli::CheckOffline(*args, std::cout, std::cerr);
  std::cerr << "leash: unknown command '" << command << "'; see `leash --help`\n";
  return leash::cli::kExitUsage;
}
