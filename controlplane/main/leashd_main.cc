// leashd: Leash's control plane. Normally started as `leash` (no command) by leash.service.
// `leashd --help` lists its flags (absl flags, through leash::ParseCommandLine); the exit codes
// are every Leash program's (base/exit_codes.h).
//   leashd --init --user=<name> [--config=...] [--json]
//   leashd --teardown [--config=...] [--run-dir=...] [--state-dir=...] [--json]
// are the host commands `leash init` / `leash teardown` run (controlplane/host_commands.h),
// read by the same parser as the daemon's flags.
// --tools-group is created (groupadd --system) when missing; see controlplane/tools_group.h.
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "controlplane/main/daemon.h"
#include "controlplane/host_commands.h"
#include "base/command_line.h"
#include "base/exit_codes.h"
#include "engine/config_defaults.h"

ABSL_FLAG(std::string, config, std::string(leash::engine::kDefaultConfigPath), "the floor config");
ABSL_FLAG(std::string, state_dir, "/var/lib/leash", "leashd's state folder");
ABSL_FLAG(std::string, run_dir, "/run/leash", "leashd's run folder (sockets, pidfile, locks)");
ABSL_FLAG(std::string, socket, "", "the admin socket (default: <run-dir>/leash.sock)");
ABSL_FLAG(std::string, tools_socket, "", "the tools socket (default: <run-dir>/tools.sock)");
ABSL_FLAG(std::string, tools_group, "",
          "the tools socket's group, made when missing (default: leash-tools)");
ABSL_FLAG(int, tools_max_request_bytes, leash::tools::ToolsSocketLimits().max_request_bytes,
          "the largest CheckTool request the tools socket takes");
ABSL_FLAG(int, tools_calls_per_account, leash::tools::ToolsSocketLimits().max_calls_per_account,
          "CheckTool calls one account may have in flight");
ABSL_FLAG(int, tools_connections_per_account,
          leash::tools::ToolsSocketLimits().max_connections_per_account,
          "tools socket connections one account may hold open");
ABSL_FLAG(std::string, proxy_binary, "", "leash-proxy (default: next to leashd, else /usr/lib/leash/)");
ABSL_FLAG(std::string, fswatch_binary, "",
          "leash-fswatch (default: next to leashd, else /usr/lib/leash/)");
ABSL_FLAG(std::string, resolv_conf, "/etc/resolv.conf", "the host's resolvers");
ABSL_FLAG(std::string, netfilter, "auto",
          "auto (nftables, iptables only when nf_tables does not answer), nftables or iptables");
ABSL_FLAG(bool, init, false,
          "the host command `leash init` runs: write the floor for --user, then exit");
ABSL_FLAG(bool, teardown, false,
          "the host command `leash teardown` runs: release every chain a stopped leashd left");
ABSL_FLAG(std::string, user, "", "--init: the leashed user (the account is made when missing)");
ABSL_FLAG(bool, json, false, "--init, --teardown: every outcome as one JSON object on stdout");
ABSL_FLAG(std::string, fswatch_mark_only_under, "",
          "confines the watcher's marks to the mount at this directory (tests and demos on a tmpfs)");

namespace {

constexpr char kUsage[] =
    "usage: leashd [--config=/etc/leash/leash.yaml] [--state-dir=DIR] [--run-dir=DIR] [flags]\n"
    "  Leash's control plane: the chains, the sidecars, the admin and tools sockets.\n"
    "       leashd --init --user=NAME [--config=...] [--json]\n"
    "       leashd --teardown [--config=...] [--run-dir=DIR] [--state-dir=DIR] [--json]\n"
    "  The host commands `leash init` and `leash teardown` run.";

// The options from the parsed flags; InvalidArgument naming the flag that is out of range.
absl::StatusOr<leash::controlplane::DaemonOptions> OptionsFromFlags() {
  leash::controlplane::DaemonOptions options;
  options.config_path = absl::GetFlag(FLAGS_config);
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  options.run_dir = absl::GetFlag(FLAGS_run_dir);
  options.admin_socket = absl::GetFlag(FLAGS_socket);
  options.tools_socket = absl::GetFlag(FLAGS_tools_socket);
  options.tools_group = absl::GetFlag(FLAGS_tools_group);
  options.proxy_binary = absl::GetFlag(FLAGS_proxy_binary);
  options.fswatch_binary = absl::GetFlag(FLAGS_fswatch_binary);
  options.resolv_conf = absl::GetFlag(FLAGS_resolv_conf);
  options.netfilter_backend = absl::GetFlag(FLAGS_netfilter);
  options.fswatch_mark_only_under = absl::GetFlag(FLAGS_fswatch_mark_only_under);
  leash::tools::ToolsSocketLimits& limits = options.tools_limits;
  for (const auto& [name, value, out] :
       {std::tuple{"--tools-max-request-bytes", absl::GetFlag(FLAGS_tools_max_request_bytes),
                   &limits.max_request_bytes},
        std::tuple{"--tools-calls-per-account", absl::GetFlag(FLAGS_tools_calls_per_account),
                   &limits.max_calls_per_account},
        std::tuple{"--tools-connections-per-account",
                   absl::GetFlag(FLAGS_tools_connections_per_account),
                   &limits.max_connections_per_account}}) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " takes a positive whole number; got '", value, "'"));
    }
    *out = value;
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // -c PATH and $LEASH_CONFIG, as leash takes them.
  leash::base::CommandLineRules rules;
  rules.program = "leashd";
  rules.short_names = {{'c', "config"}};
  rules.env_defaults = {{"config", "LEASH_CONFIG"}};
  if (const int exit_code =
          leash::base::ParseCommandLineForMain(argc, argv, "leashd", kUsage, nullptr, rules);
      exit_code >= 0) {
    return exit_code;
  }
  absl::StatusOr<leash::controlplane::DaemonOptions> options = OptionsFromFlags();
  const bool init = absl::GetFlag(FLAGS_init);
  const bool teardown = absl::GetFlag(FLAGS_teardown);
  if (options.ok() && (init || teardown)) {
    leash::controlplane::HostCommandOptions host;
    host.config_path = options->config_path;
    host.run_dir = options->run_dir;
    host.state_dir = options->state_dir;
    host.admin_socket = options->admin_socket;
    host.user = absl::GetFlag(FLAGS_user);
    host.json = absl::GetFlag(FLAGS_json);
    return leash::controlplane::RunHostCommand(init, teardown, host);
  }
  if (options.ok() && (!absl::GetFlag(FLAGS_user).empty() || absl::GetFlag(FLAGS_json))) {
    options = absl::InvalidArgumentError("--user and --json go with --init or --teardown");
  }
  if (!options.ok()) {
    std::cerr << "leashd: " << options.status().message() << "\n";
    return leash::base::kExitUsage;
  }
  return leash::controlplane::RunDaemon(*options);
}
