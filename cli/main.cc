// leash: the operator's command line. With no command it runs the service (execs leashd).
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "base/json_outcome.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/offline.h"
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
      io.out << leash::cli::HelpText("");
      return leash::kExitOk;
    }
    return leash::cli::RunService(*args, io);
  }
  const std::string& command = args->words[0];
  if (args->help || command == "help") {
    io.out << leash::cli::HelpText(command == "help" && args->words.size() > 1 ? args->words[1]
                                   : command == "help"                         ? ""
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

// Under --json, the host commands (`init`, `teardown`) exec leashd, which prints the one
// object itself; what they print without getting that far (a usage error, leashd not found)
// is put in the envelope here. `logs --json` streams the log's own lines (and notices as
// {"notice": ...} lines); a failure ends the stream with the envelope as its last line.
enum class JsonShape { kOneObject, kHandedToLeashd, kStream };

JsonShape ShapeOf(const Args& args) {
  if (args.help || args.words.empty()) return JsonShape::kOneObject;
  const std::string& command = args.words[0];
  if (command == "init" || command == "teardown") return JsonShape::kHandedToLeashd;
  if (command == "logs") return JsonShape::kStream;
  return JsonShape::kOneObject;
}

}  // namespace

int main(int argc, char** argv) {
  const absl::StatusOr<Args> args =
      leash::cli::ParseArgs(argc, argv, std::getenv("LEASH_CONFIG"));
  const bool json = args.ok() ? args->json : leash::base::WantsJson(argc, argv);
  if (!json) return Run(args, Io{std::cout, std::cerr});
  const JsonShape shape = args.ok() ? ShapeOf(*args) : JsonShape::kOneObject;
  std::ostringstream out;
  std::ostringstream err;
  if (shape == JsonShape::kStream) {
    const int exit_code = Run(args, Io{std::cout, err});
    if (exit_code != 0) {
      std::cout << leash::base::JsonOutcome("", err.str(), exit_code) << "\n";
    } else {
      std::cerr << err.str();
    }
    return exit_code;
  }
  // Returns here only when no exec happened (kHandedToLeashd) or for every other command.
  const int exit_code = Run(args, Io{out, err});
  std::cout << leash::base::JsonOutcome(out.str(), err.str(), exit_code) << "\n";
  return exit_code;
}
