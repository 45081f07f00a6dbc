// Commands that act on this host directly rather than through leashd: init (before there is a
// service), restart (the service manager), and running the service itself.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "cli/render.h"
#include "cli/leashd_exec.h"
#include "engine/config_defaults.h"

namespace leash::cli {
int RunInit(const Args& args, Io io) {
  const std::string user = args.Option("user");
  if (user.empty() || args.words.size() != 1) {
    io.err << "usage: leash init --user <name>\n";
    return base::kExitUsage;
  }
  // The floor file is leashd's: leashd writes it (controlplane/host_commands.h).
  std::vector<std::string> flags = {"--init", "--user=" + user, "--config=" + args.config_path};
  if (args.json) flags.push_back("--json");
  return ExecLeashd(flags, io);
}

int RunRestart(const Args& args, Io io) {
  struct stat st;
  if (stat("/run/systemd/system", &st) == 0) {
    const int rc = std::system("systemctl restart leash.service");
    if (rc != 0) {
      io.err << "leash restart: systemctl restart leash.service failed; see "
                "systemctl status leash.service\n";
      return base::kExitRefused;
    }
    io.out << (args.json ? JsonObject({{"restarted", "leash.service"}}) : "restarted leash.service")
           << "\n";
    return base::kExitOk;
  }
  io.err << "leash restart: systemd is not running here, so there is no leash.service to "
            "restart. Stop leashd with `kill $(cat /run/leash/leashd.pid)` (its stop path "
            "releases every chain) and start it again with `leash`.\n"
            "To pick up a policy change, a restart is the wrong instrument: `leash reconcile` "
            "changes only what differs without un-confining anybody.\n";
  return base::kExitRefused;
}

int RunService(const Args& args, Io io) {
  std::vector<std::string> flags = {"--config=" + args.config_path};
  for (const auto& [name, value] : args.options) flags.push_back("--" + name + "=" + value);
  return ExecLeashd(flags, io);
}

}  // namespace leash::cli
