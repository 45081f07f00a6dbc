// `leash teardown`: the stop path's safety net, run by leash.service's ExecStopPost after
// leashd has exited, with --unless-failed so that it releases after a deliberate stop only
// (cli/service_stop.h), and by an operator by hand; refused while a leashd runs on the run
// folder or in this network namespace. Releases every UID the port map holds, the configured user's, and
// any agent_<uid> chain still in the kernel — "releasing for real is the service's stop path,
// which drops every UID the port map holds".
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "cli/render.h"
#include "cli/service_stop.h"
#include "controlplane/inbound_routing.h"
#include "controlplane/instance_lock.h"
#include "controlplane/netfilter_factory.h"
#include "controlplane/port_map.h"
#include "controlplane/rtnl_route_rules.h"

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
    // Judged first: after a failure nothing below runs, not even the root check, so the
    // unit's stop is not recorded as a second failure.
    const ServiceStop stop =
        JudgeServiceStop(Env("SERVICE_RESULT"), Env("EXIT_CODE"), Env("EXIT_STATUS"));
    if (!stop.release) {
      io.err << "leash teardown: nothing released: " << stop.why << "\n";
      return kExitOk;
    }
    io.err << "leash teardown: " << stop.why << "; releasing every chain\n";
  }
  if (geteuid() != 0) {
    io.err << "leash teardown: must run as root (it removes nftables rules)\n";
    return kExitRefused;
  }
  // Under a running leashd, releasing its chains would un-confine every agent while leashd
  // believes them applied: teardown takes leashd's own locks (its run folder's and its network
  // namespace's), and holds them while it releases so that no leashd starts meanwhile. A run
  // folder that does not exist has no leashd in it, but a leashd on other folders may still run
  // in this network namespace.
  const std::string run_dir = args.Option("run-dir", "/run/leash");
  absl::StatusOr<controlplane::InstanceLock> locked =
      access(run_dir.c_str(), F_OK) == 0
          ? controlplane::LockInstance(run_dir, absl::ZeroDuration())
          : controlplane::LockNetworkNamespace(absl::ZeroDuration());
  if (!locked.ok()) {
    io.err << "leash teardown: cannot tell whether a leashd runs on " << run_dir
           << " or in this network namespace: " << locked.status().message()
           << "; nothing released\n";
    return kExitRefused;
  }
  if (!locked->acquired()) {
    io.err << "leash teardown: " << locked->held_by
           << "; nothing released. Stop it (`systemctl stop leash`, or SIGTERM to its pid): its "
              "stop path releases every chain itself, and teardown is for after it has ended\n";
    return kExitRefused;
  }
  std::vector<uint32_t> uids;
  const std::string state_dir = args.Option("state-dir", "/var/lib/leash");
  const std::string ports = state_dir + "/ports.json";
  absl::StatusOr<controlplane::PortMap> map = controlplane::PortMap::Load(ports);
  if (map.ok()) {
    for (const controlplane::PortMap::Assignment& a : map->All()) uids.push_back(a.uid);
  } else {
    // Carry on: the kernel's own list below still finds every chain there is.
    io.err << "leash teardown: " << map.status().message() << "\n";
  }
  absl::StatusOr<leash::v1::Config> floor = LoadConfigFile(args.config_path);
  if (floor.ok() && !floor->user().empty()) {
    if (const passwd* pw = getpwnam(floor->user().c_str())) uids.push_back(pw->pw_uid);
  }
  absl::StatusOr<controlplane::NetfilterChoice> choice = controlplane::ChooseNetfilter();
  if (!choice.ok()) {
    io.err << "leash teardown: " << choice.status().message() << "\n";
    return kExitRefused;
  }
  if (absl::StatusOr<std::vector<uint32_t>> listed = choice->netfilter->ListSubjects();
      listed.ok()) {
    uids.insert(uids.end(), listed->begin(), listed->end());
  }
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  absl::Status released = controlplane::TeardownSubjects(*choice->netfilter, uids);
  // With the chains, the policy-routing rules of the inbound drop, the refusal device with its
  // routes, and the host's tcp_fwmark_accept (controlplane/inbound_routing.h).
  absl::StatusOr<std::unique_ptr<controlplane::RtnlRouteRules>> rules =
      controlplane::RtnlRouteRules::Open();
  absl::Status unrouted = rules.status();
  if (rules.ok()) {
    unrouted = controlplane::InboundRouting(rules->get(),
                                            controlplane::SavedFwmarkAcceptPath(run_dir))
                   .ReleaseHost();
  }
  if (released.ok()) released = unrouted;
  if (!released.ok()) {
    io.err << "leash teardown: " << released.message() << "\n";
    return kExitRefused;
  }
  if (args.json) {
    io.out << JsonObject({{"released_subjects", "", static_cast<double>(uids.size()), true},
                          {"netfilter", choice->netfilter->Describe()}})
           << "\n";
    return kExitOk;
  }
  io.out << "released " << uids.size() << " subject(s)' chains (" << choice->netfilter->Describe()
         << ")\n";
  return kExitOk;
}

}  // namespace leash::cli
