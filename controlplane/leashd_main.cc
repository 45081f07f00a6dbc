// leashd: Leash's control plane. Normally started as `leash` (no command) by leash.service.
//   leashd [--config=/etc/leash/leash.yaml] [--state-dir=/var/lib/leash] [--run-dir=/run/leash]
//          [--socket=<admin socket>] [--tools-socket=<path>] [--tools-group=leash-tools]
//          [--proxy-binary=<path>] [--fswatch-binary=<path>] [--resolv-conf=<path>]
//          [--netfilter=auto|nftables|iptables] [--fswatch-mark-only-under=<tmpfs dir>]
//          [--tools-max-request-bytes=4194304] [--tools-calls-per-account=8]
//          [--tools-connections-per-account=8]
//   leashd --init --user=<name> [--config=...] [--json]
//   leashd --teardown [--config=...] [--run-dir=...] [--state-dir=...] [--json]
// --tools-group is created (groupadd --system) when missing; see controlplane/tools_group.h.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "controlplane/daemon.h"
#include "controlplane/host_commands.h"

namespace {

// A positive count for a limit flag; false (with the reason printed) otherwise.
bool ParseLimit(const std::string& name, const std::string& value, int& out) {
  int parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed <= 0) {
    std::cerr << "leashd: " << name << " takes a positive whole number; got '" << value << "'\n";
    return false;
  }
  out = parsed;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // `leashd --init` / `leashd --teardown`: the host commands `leash init` / `leash teardown` run.
  if (std::optional<int> done = leash::controlplane::RunHostCommand(argc, argv)) return *done;
  leash::controlplane::DaemonOptions options;
  if (const char* env = std::getenv("LEASH_CONFIG"); env != nullptr && *env != '\0') {
    options.config_path = env;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (eq == std::string::npos && name != "--help") {
      std::cerr << "leashd: flags take --name=value; got '" << arg << "'\n";
      return 2;
    }
    if (name == "--config" || name == "-c") {
      options.config_path = value;
    } else if (name == "--state-dir") {
      options.state_dir = value;
    } else if (name == "--run-dir") {
      options.run_dir = value;
    } else if (name == "--socket") {
      options.admin_socket = value;
    } else if (name == "--tools-socket") {
      options.tools_socket = value;
    } else if (name == "--tools-group") {
      options.tools_group = value;
    } else if (name == "--tools-max-request-bytes") {
      if (!ParseLimit(name, value, options.tools_limits.max_request_bytes)) return 2;
    } else if (name == "--tools-calls-per-account") {
      if (!ParseLimit(name, value, options.tools_limits.max_calls_per_account)) return 2;
    } else if (name == "--tools-connections-per-account") {
      if (!ParseLimit(name, value, options.tools_limits.max_connections_per_account)) return 2;
    } else if (name == "--proxy-binary") {
      options.proxy_binary = value;
    } else if (name == "--fswatch-binary") {
      options.fswatch_binary = value;
    } else if (name == "--resolv-conf") {
      options.resolv_conf = value;
    } else if (name == "--fswatch-mark-only-under") {
      options.fswatch_mark_only_under = value;
    } else if (name == "--netfilter") {
      options.netfilter_backend = value;
    } else {
      std::cerr << "leashd: unknown flag '" << name << "' (see the header of leashd_main.cc, or "
                << "`leash --help`)\n";
      return 2;
    }
  }
  return leash::controlplane::RunDaemon(options);
}
