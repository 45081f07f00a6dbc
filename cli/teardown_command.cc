// `leash teardown`: the stop path's safety net, run by leash.service's
// ExecStopPost after leashd has exited, with --unless-failed so that it
// releases after a deliberate stop only (cli/service_stop.h), and by an
// operator by hand. The release itself is leashd's
// (`leashd --teardown`, controlplane/host_commands.h): its locks, port map and
// nftables.
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/leashd_exec.h"
#include "cli/offline.h"
#include "cli/service_stop.h"

namespace leash::cli {

namespace {

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

int RunTeardown(const Args& args, Io io) {
  if (args.unless_failed) {
    // Judged first: after a failure nothing below runs, not even the root
    // check, so the unit's stop is not recorded as a second failure.
    const ServiceStop stop =
        JudgeServiceStop(Env("SERVICE_RESULT"), Env("EXIT_CODE"), Env("EXIT_STATUS"));
    if (!stop.release) {
      io.err << "leash teardown: nothing released: " << stop.why << "\n";
      return base::kExitOk;
    }
    io.err << "leash teardown: " << stop.why << "; releasing every chain\n";
  }
  std::vector<std::string> flags = {"--teardown", "--config=" + args.config_path,
                                    "--run-dir=" + args.Option("run-dir", "/run/leash"),
                                    "--state-dir=" + args.Option("state-dir", "/var/lib/leash")};
  if (args.json) flags.push_back("--json");
  return ExecLeashd(flags, io);
}

}  // namespace leash::cli
