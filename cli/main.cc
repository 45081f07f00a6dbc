// leash: the operator's command line. With no command it runs the service (execs leashd).
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>

#include "cli/args.h"
#include "cli/commands.h"
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

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<Args> args = leash::cli::ParseArgs(argc, argv, std::getenv("LEASH_CONFIG"));
  if (!args.ok()) {
    std::cerr << "leash: " << args.status().message() << "\n";
    return leash::kExitUsage;
  }
  Io io{std::cout, std::cerr};
  if (args->words.empty()) {
    if (args->help) {
      std::cout << leash::cli::Usage("");
      return leash::kExitOk;
    }
    return leash::cli::RunService(*args, io);
  }
  const std::string& command = args->words[0];
  if (args->help || command == "help") {
    std::cout << leash::cli::Usage(command == "help" && args->words.size() > 1 ? args->words[1]
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
  std::cerr << "leash: unknown command '" << command << "'; see `leash --help`\n";
  return leash::kExitUsage;
}
