#include "cli/usage.h"

#include <map>

namespace leash::cli {
namespace {

constexpr char kOverview[] = R"(leash: per-user enforcement for local AI agents

usage: leash [global flags] <command> [args]

commands:
  validate                       load and judge the config; exit 1 on errors or criticals
  check <surface> <subject>      dry-run one decision (network: host:port)

surfaces: network|net, filesystem|fs, commands|cmd, tools|tool

global flags:
  -c, --config <path>   config file (default $LEASH_CONFIG, else /etc/leash/leash.yaml)
  --json                print the result as one JSON object
  -h, --help            this text; `leash <command> --help` for one command

exit codes:
  0  ok (check: allowed)
  1  refused, blocked, or findings that fail validation
  2  usage error
  3  leashd is not answering
)";

const std::map<std::string, std::string>& CommandHelp() {
  static const auto* help = new std::map<std::string, std::string>{
      {"validate", R"(usage: leash validate [--json]
  Loads the config and reports every finding: a blacklist surface with an allow list
  (never consulted: error), a deny entry that can never match (critical), an allow entry
  that can never match (warning), commands in blacklist mode (warning).
  Exits 1 when any finding is an error or critical, 0 with warnings only.
)"},
      {"check", R"(usage: leash check <surface> <subject> [--json]
  Dry-runs a decision against the config for the configured user.
  network: host:port, ip:port or [v6]:port   filesystem: an absolute path
  commands: a binary path or name            tools: a tool name
  Exits 0 when allowed, 1 when blocked.
)"},
  };
  return *help;
}

}  // namespace

std::string Usage(const std::string& command) {
  auto it = CommandHelp().find(command);
  return it == CommandHelp().end() ? kOverview : it->second;
}

}  // namespace leash::cli
