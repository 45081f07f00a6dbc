#include "controlplane/host_commands.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/exit_codes.h"
#include "base/json_line.h"
#include "base/json_outcome.h"
#include "controlplane/floor_file.h"
#include "controlplane/inbound_routing.h"
#include "controlplane/instance_lock.h"
#include "controlplane/leftover_sidecars.h"
#include "controlplane/netfilter_factory.h"
#include "controlplane/port_map.h"
#include "controlplane/release_all_subjects.h"
#include "controlplane/rtnl_route_rules.h"
#include "engine/config_defaults.h"

namespace leash::controlplane {
namespace {

using base::JsonObject;

}  // namespace

// The floor `leash init` writes when there is none: closed by default where
// that cannot brick the agent (network, tools), and a blacklist of the obvious
// on the filesystem and commands.
leash::v1::Config InitialFloor(const std::string& user) {
  leash::v1::Config c;
  c.set_user(user);
  c.set_fail_mode("closed");
  c.mutable_network()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_network()->mutable_allow();
  c.mutable_network()->mutable_deny();
  c.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_filesystem()->mutable_allow();
  for (const char* path :
       {"/etc/shadow", "/etc/sudoers", "/etc/leash", "/var/lib/leash", "/root"}) {
    c.mutable_filesystem()->mutable_deny()->add_entries(path);
  }
  c.mutable_commands()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_commands()->mutable_allow();
  for (const char* binary : {"sudo", "su", "pkexec", "doas"}) {
    c.mutable_commands()->mutable_deny()->add_entries(binary);
  }
  c.mutable_tools()->set_mode(leash::v1::MODE_WHITELIST);
  c.mutable_tools()->mutable_allow();
  c.mutable_tools()->mutable_deny();
  (*c.mutable_tools()->mutable_inspect())["secrets"] = leash::v1::INSPECT_ACTION_BLOCK;
  (*c.mutable_tools()->mutable_inspect())["pii"] = leash::v1::INSPECT_ACTION_LOG;
  (*c.mutable_tools()->mutable_inspect())["priv_esc"] = leash::v1::INSPECT_ACTION_BLOCK;
  c.mutable_logging()->set_level("info");
  c.mutable_logging()->set_decisions(std::string(engine::kDefaultDecisionLog));
  c.mutable_enforcers()->set_network(true);
  c.mutable_enforcers()->set_filesystem(true);
  c.mutable_enforcers()->set_tools(true);
  return c;
}

int RunInitCommand(const HostCommandOptions& options, std::ostream& out, std::ostream& err) {
  const std::string& user = options.user;
  if (user.empty()) {
    err << "usage: leash init --user <name>\n";
    return base::kExitUsage;
  }
  if (geteuid() != 0) {
    err << "leash init: must run as root (it may create the account and writes "
        << options.config_path << " as root:" << user << " 0640)\n";
    return base::kExitRefused;
  }
  bool created = false;
  if (getpwnam(user.c_str()) == nullptr) {
    const std::string command =
        absl::StrCat("useradd --create-home --user-group --shell /bin/bash '", user, "'");
    if (user.find('\'') != std::string::npos || std::system(command.c_str()) != 0) {
      err << "leash init: could not create the account '" << user << "' (" << command << ")\n";
      return base::kExitRefused;
    }
    created = true;
  }
  const passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) {
    err << "leash init: account '" << user << "' not found after creating it\n";
    return base::kExitRefused;
  }
  leash::v1::Config config;
  bool existed = false;
  absl::StatusOr<leash::v1::Config> current = LoadFloor(options.config_path);
  if (current.ok()) {
    config = *current;
    config.set_user(user);
    existed = true;
  } else if (absl::IsNotFound(current.status())) {
    config = InitialFloor(user);
  } else {
    err << "leash init: " << current.status().message()
        << "\nfix the config (or move it aside) and run leash init again\n";
    return base::kExitRefused;
  }
  const std::string dir = options.config_path.substr(0, options.config_path.rfind('/'));
  if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    err << "leash init: mkdir " << dir << ": " << std::strerror(errno) << "\n";
    return base::kExitRefused;
  }
  // Re-running init for the user the config already names (the installer does,
  // on every upgrade) keeps the operator's file byte for byte — comments and
  // layout included — and only re-states its mode and owner: "re-states it on
  // upgrade so an existing box is repaired".
  const bool keep = existed && current->user() == user;
  absl::Status written =
      keep ? RestateFloorPermissions(options.config_path, kFloorOwner, pw->pw_gid)
           : WriteFloor(options.config_path, config, kFloorOwner, pw->pw_gid);
  if (!written.ok()) {
    err << "leash init: " << written.message() << "\n";
    return base::kExitRefused;
  }
  if (options.json) {
    out << JsonObject({{"user", user},
                       {"uid", "", static_cast<double>(pw->pw_uid), true},
                       {"account_created", "", 0, false, true, created},
                       {"config", options.config_path},
                       {"config_written", keep      ? "kept"
                                          : existed ? "updated"
                                                    : "created"},
                       {"mode", "0640"},
                       {"owner", "root:" + user}})
        << "\n";
    return base::kExitOk;
  }
  out << "leashed user: " << user << " (uid " << pw->pw_uid << ")"
      << (created ? ", account created" : "") << "\n"
      << (keep      ? "kept "
          : existed ? "updated "
                    : "wrote ")
      << options.config_path << (keep ? " as it was, re-stated" : "") << " (0640 root:" << user
      << ": the leashed user reads it through the group and cannot rewrite "
         "it)\n"
      << "next: review it, `leash validate`, then start the service "
         "(systemctl enable --now leash.service); if it is already running, "
         "`leash restart`\n";
  return base::kExitOk;
}

int RunTeardownCommand(const HostCommandOptions& options, std::ostream& out, std::ostream& err) {
  if (geteuid() != 0) {
    err << "leash teardown: must run as root (it removes nftables rules)\n";
    return base::kExitRefused;
  }
  // Under a running leashd, releasing its chains would un-confine every agent
  // while leashd believes them applied: teardown takes leashd's own locks (its
  // run folder's and its network namespace's), and holds them while it releases
  // so that no leashd starts meanwhile. A run folder that does not exist has no
  // leashd in it, but a leashd on other folders may still run in this network
  // namespace.
  const std::string& run_dir = options.run_dir;
  absl::StatusOr<InstanceLock> locked = access(run_dir.c_str(), F_OK) == 0
                                            ? LockInstance(run_dir, absl::ZeroDuration())
                                            : LockNetworkNamespace(absl::ZeroDuration());
  if (!locked.ok()) {
    err << "leash teardown: cannot tell whether a leashd runs on " << run_dir
        << " or in this network namespace: " << locked.status().message() << "; nothing released\n";
    return base::kExitRefused;
  }
  if (!locked->acquired()) {
    err << "leash teardown: " << locked->held_by
        << "; nothing released. Stop it (`systemctl stop leash`, or SIGTERM to "
           "its pid): its "
           "stop path releases every chain itself, and teardown is for after "
           "it has ended\n";
    return base::kExitRefused;
  }
  // What a crashed leashd left running goes first: a watcher still enforcing its last map
  // would go on denying after every chain is released, and a proxy would hold the ports.
  const std::string admin_socket =
      options.admin_socket.empty() ? run_dir + "/leash.sock" : options.admin_socket;
  const std::vector<std::string> stopped =
      StopLeftoverSidecars({"leash-fswatch", "leash-proxy"}, admin_socket);
  for (const std::string& line : stopped) (options.json ? err : out) << line << "\n";
  std::vector<uint32_t> uids;
  const std::string& state_dir = options.state_dir;
  const std::string ports = state_dir + "/ports.json";
  absl::StatusOr<PortMap> map = PortMap::Load(ports);
  if (map.ok()) {
    for (const PortMap::Assignment& a : map->All()) uids.push_back(a.uid);
  } else {
    // Carry on: the kernel's own list below still finds every chain there is.
    err << "leash teardown: " << map.status().message() << "\n";
  }
  absl::StatusOr<leash::v1::Config> floor = LoadFloor(options.config_path);
  if (floor.ok() && !floor->user().empty()) {
    if (const passwd* pw = getpwnam(floor->user().c_str())) uids.push_back(pw->pw_uid);
  }
  absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter();
  if (!choice.ok()) {
    err << "leash teardown: " << choice.status().message() << "\n";
    return base::kExitRefused;
  }
  if (absl::StatusOr<std::vector<uint32_t>> listed = choice->netfilter->ListSubjects();
      listed.ok()) {
    uids.insert(uids.end(), listed->begin(), listed->end());
  }
  // With the chains, the policy-routing rules of the inbound drop, the refusal device with its
  // routes, and the host's tcp_fwmark_accept (controlplane/inbound_routing.h).
  absl::StatusOr<std::unique_ptr<RtnlRouteRules>> rules = RtnlRouteRules::Open();
  std::optional<InboundRouting> routing;
  if (rules.ok()) routing.emplace(rules->get(), SavedFwmarkAcceptPath(run_dir));
  Released released = ReleaseAllSubjects(*choice->netfilter, uids, routing ? &*routing : nullptr);
  if (!rules.ok()) released.routing = rules.status();
  const absl::Status failed = !released.chains.ok() ? released.chains : released.routing;
  if (!failed.ok()) {
    err << "leash teardown: " << failed.message() << "\n";
    return base::kExitRefused;
  }
  if (options.json) {
    out << JsonObject({{"released_subjects", "", static_cast<double>(released.subjects), true},
                       {"netfilter", choice->netfilter->Describe()}})
        << "\n";
    return base::kExitOk;
  }
  out << "released " << released.subjects << " subject(s)' chains ("
      << choice->netfilter->Describe() << ")\n";
  return base::kExitOk;
}

namespace {

int RunOne(bool init, const HostCommandOptions& options, std::ostream& out, std::ostream& err) {
  return init ? RunInitCommand(options, out, err) : RunTeardownCommand(options, out, err);
}

}  // namespace

int RunHostCommand(bool init, bool teardown, const HostCommandOptions& options) {
  if (init && teardown) {
    const char kBoth[] = "leashd: --init and --teardown are two commands; give one";
    if (options.json) {
      std::cout << base::JsonOutcome("", kBoth, base::kExitUsage) << "\n";
    } else {
      std::cerr << kBoth << "\n";
    }
    return base::kExitUsage;
  }
  if (!options.json) return RunOne(init, options, std::cout, std::cerr);
  // --json: one object for every outcome, a refusal or an error included (what `leash` gives
  // every command; `leash init` and `leash teardown` hand over to this).
  std::ostringstream out;
  std::ostringstream err;
  const int exit_code = RunOne(init, options, out, err);
  std::cout << base::JsonOutcome(out.str(), err.str(), exit_code) << "\n";
  return exit_code;
}

}  // namespace leash::controlplane
