// `leash teardown`: the stop path's safety net, run by leash.service's ExecStopPost after
// leashd has exited (however it exited). Releases every UID the port map holds, the
// configured user's, and any agent_<uid> chain still in the kernel — "releasing for real is
// the service's stop path, which drops every UID the port map holds".
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "cli/render.h"
#include "controlplane/netfilter_factory.h"
#include "controlplane/port_map.h"

namespace leash::cli {

int RunTeardown(const Args& args, Io io) {
  if (geteuid() != 0) {
    io.err << "leash teardown: must run as root (it removes nftables rules)\n";
    return kExitRefused;
  }
  std::vector<uint32_t> uids;
  const std::string ports = args.Option("state-dir", "/var/lib/leash") + "/ports.json";
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
