// leash: the operator's command line. With no command it runs the service (execs leashd).
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json_outcome.h"
#include "cli/offline.h"
#include "cli/usage.h"
#include "engine/decision.h"

namespace {

using leash::cli::Args;
using leash::cli::Io;

using Command = std::function<int(const Args&, Io)>;

const std::map<std::string, Command>& Commands() {
  static const auto* commands = new std::map<std::string, Command>{
      {"init", leash::cli::RunInit},
      {"status", leash::cli::RunStatus},
      {"validate", leash::cli::RunValidate},
      {"check", leash::cli::RunCheck},
      {"reconcile", leash::cli::RunReconcile},
      {"profile", leash::cli::RunProfile},
      {"bind", leash::cli::RunBind},
      {"unbind", leash::cli::RunUnbind},
      {"bindings", leash::cli::RunBindings},
      {"logs", leash::cli::RunLogs},
      {"restart", leash::cli::RunRestart},
      {"teardown", leash::cli::RunTeardown},
      {"suggest", leash::cli::RunSuggest},
  };
  return *commands;
}

// Runs the command `args` names (or reports why argv did not parse), printing to `io`.
int Run(const absl::StatusOr<Args>& args, Io io) {
  if (!args.ok()) {
    io.err << "leash: " << args.status().message() << "\n";
    return leash::kExitUsage;
  }
  if (args->words.empty()) {
    if (args->help) {
      io.out << leash::cli::Usage("");
      return leash::kExitOk;
    }
    return leash::cli::RunService(*args, io);
  }
  const std::string& command = args->words[0];
  if (args->help || command == "help") {
    io.out << leash::cli::Usage(command == "help" && args->words.size() > 1 ? args->words[1]
                                : command == "help" ? ""
                                                    : command);
    return leash::kExitOk;
  }
  if ((command == "tool" || command == "tools") && args->words.size() > 1 &&
      args->words[1] == "check") {
    return leash::cli::RunToolCheck(*args, io);
  }
  auto it = Commands().find(command);
  if (it != Commands().end()) return it->second(*args, io);
  // leash <surface> allow|deny|remove|list|mode ... (and `leash tool check`).
  if (leash::engine::ParseSurfaceName(command).ok()) {
    if (args->words.size() > 1 && (args->words[1] == "list" || args->words[1] == "remove")) {
      return leash::cli::RunEntries(*args, io);
    }
    return leash::cli::RunListEdit(*args, io);
  }
  io.err << "leash: unknown command '" << command << "'; see `leash --help`\n";
  return leash::kExitUsage;
}

// The commands whose --json output is not one result: the service and the host commands
// exec leashd, which prints its own line; logs prints the decision log's lines as they come.
bool PrintsItsOwnJson(const Args& args) {
  if (args.words.empty()) return !args.help;
  const std::string& command = args.words[0];
  return !args.help && (command == "init" || command == "teardown" || command == "logs");
}

}  // namespace

int main(int argc, char** argv) {
  const absl::StatusOr<Args> args =
      leash::cli::ParseArgs(argc, argv, std::getenv("LEASH_CONFIG"));
  const bool json = args.ok() ? args->json : leash::cli::WantsJson(argc, argv);
  if (!json || (args.ok() && PrintsItsOwnJson(*args))) {
    return Run(args, Io{std::cout, std::cerr});
  }
  std::ostringstream out;
  std::ostringstream err;
  const int exit_code = Run(args, Io{out, err});
  std::cout << leash::cli::JsonOutcome(out.str(), err.str(), exit_code) << "\n";
  return exit_code;
}
