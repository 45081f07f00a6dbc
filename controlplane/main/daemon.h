// leashd as a whole: the start sequence, the signal loop and the stop path.
//
// Start: load the floor (its inert entries reported, not refused) -> resolve the user ->
// discover agent accounts (none: the single-subject path, and /var/lib/leash is not created)
// -> open the decision log -> the instance locks -> bind the proxy's ports (ProxyPortHold)
// -> the admin socket (Control, PolicyStream) -> the nft applier (old-shape tables dropped
// first) -> stop a killed leashd's leftover sidecars and take the ports they held -> the
// sidecars (the proxy inherits the port sockets) -> the first reconcile (every subject
// denied in the watcher before its chain goes in) -> the tools socket -> the pidfile.
// Signals: SIGHUP asks for a reconcile (coalesced); SIGTERM/SIGINT stop.
// Stop: stop the sidecars, close the fanotify group leashd keeps for its watchers (which
// releases the host), release every chain the port map holds (a deliberate stop only: an exit
// for failure leaves them in place), remove the sockets and the pidfile; the proxy's ports are
// closed last, as it returns.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tools_api/tools_service.h"

namespace leash::controlplane {

struct DaemonOptions {
  std::string config_path = "/etc/leash/leash.yaml";
  std::string state_dir = "/var/lib/leash";
  std::string run_dir = "/run/leash";
  // Default <run_dir>/leash.sock and <run_dir>/tools.sock.
  std::string admin_socket;
  std::string tools_socket;
  // Group of the tools socket (0660), for the agent harness; made if missing (tools_group.h).
  // Default: leash-tools, never the leashed user's group (which reads leash.yaml).
  std::string tools_group;
  // What one account may make leashd hold on the tools socket (see tools::ToolsSocketLimits).
  tools::ToolsSocketLimits tools_limits;
  // Default: next to leashd, else /usr/lib/leash/.
  std::string proxy_binary;
  std::string fswatch_binary;
  std::string resolv_conf = "/etc/resolv.conf";
  // The folder of passwd, group, subuid, subgid and nsswitch.conf, watched for changes.
  std::string account_files_dir = "/etc";
  // Confines the watcher's fanotify marks to the mount at this directory (tests and demos on a
  // tmpfs: a stalled listener on "/" would freeze the host). Empty: the policy decides.
  std::string fswatch_mark_only_under;
  // "auto" (nftables, iptables only when nf_tables does not answer), "nftables", "iptables".
  std::string netfilter_backend = "auto";
  absl::Duration ack_timeout = absl::Seconds(10);
  // The first retry of a pass that left something not in force (ReconcileLoop's `retry`).
  absl::Duration reconcile_retry = absl::Seconds(5);
  // How long a sidecar may go without a heartbeat before it is killed and respawned.
  absl::Duration heartbeat_timeout = absl::Seconds(5);
  // The same for the watcher, whose silence (a SIGSTOP) stalls every open on the marked
  // filesystems until its standby takes over: 8 of its heartbeats (fswatch/app.h).
  absl::Duration fswatch_heartbeat_timeout = absl::Seconds(2);
};

// Runs leashd until SIGTERM/SIGINT (or a sidecar that keeps dying). Returns the process exit
// code: 0 after a deliberate stop, which released every chain; 1 after giving up on a sidecar,
// or for a start that cannot enforce what the config asks for (it prints why), both of which
// leave every chain in the kernel as it was.
int RunDaemon(const DaemonOptions& options);

}  // namespace leash::controlplane
