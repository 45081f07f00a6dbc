// leashd's host commands, run where no leashd is running: `leashd --init`
// writes the floor file for the leashed user, `leashd --teardown` releases
// every chain a stopped leashd left. The CLI's `leash init` and `leash
// teardown` exec them, so the files, locks and nftables stay leashd's alone.
// Each prints what the CLI printed before ("leash init: ...", the same --json
// line) and returns its exit code: 0 done, 1 refused, 2 usage.
#pragma once

#include <ostream>
#include <string>

#include "leash/v1/policy.pb.h"

namespace leash::controlplane {

struct HostCommandOptions {
  std::string config_path;  // the floor file (leash.yaml)
  std::string run_dir;
  std::string state_dir;
  // The admin socket the stopped leashd's sidecars were started against (teardown stops the
  // ones still running); empty: <run_dir>/leash.sock.
  std::string admin_socket;
  std::string user;  // --init: the leashed user (the account is created when missing)
  bool json = false;
};

// The floor `leash init` writes when there is none.
leash::v1::Config InitialFloor(const std::string& user);

// `leash init --user <name>`: creates the account when missing and writes (or,
// for the user the file already names, keeps and re-states) the floor file 0640
// root:<user>. Root only.
int RunInitCommand(const HostCommandOptions& options, std::ostream& out, std::ostream& err);

// `leash teardown`: the stop path's safety net, run by leash.service's
// ExecStopPost after leashd has exited (the CLI judges --unless-failed first)
// and by an operator by hand; refused while a leashd runs on the run folder or
// in this network namespace. First stops the sidecars a crashed leashd left
// running (under systemd's KillMode=process they outlive it and keep enforcing
// its last map for the next leashd to take over), then releases every UID the
// port map holds, the configured user's, and any agent_<uid> chain still in the
// kernel. Root only.
int RunTeardownCommand(const HostCommandOptions& options, std::ostream& out, std::ostream& err);

// leashd's entry for the host commands, with leashd's parsed flags (--init, --teardown and the
// options): runs the one asked for on stdout/stderr and returns its exit code; both at once is
// a usage error.
int RunHostCommand(bool init, bool teardown, const HostCommandOptions& options);

}  // namespace leash::controlplane
