// leash-proxy: the network surface's sidecar. leashd spawns and supervises it; nftables
// redirects each leashed UID's outbound TCP to that UID's listener here, and every connection
// is judged against that UID's policy (see proxy/listener_manager.h and proxy/connection.h).
//
// Flags:
//   --decision-log-fd=N     required. A descriptor leashd opened (O_APPEND) on the decision
//                           log (logging.decisions, or its stdout) and left open across exec.
//                           One JSON line per decision; the proxy owns no files.
//   --decision-feed-fd=N    optional. leashd's live decision stream: an AF_UNIX datagram
//                           socket every batch written to the log is also sent on, without
//                           waiting (a full one loses lines, counted in the log).
//   --admin-socket=PATH     leashd's admin socket, where PolicyStream is served
//                           (default /run/leash/leash.sock). The UID -> policy map arrives
//                           there; the proxy acks each version once it is in force.
//   --peek-timeout=DUR      how long a new connection may send nothing before it is decided on
//                           its address alone (server-speaks-first protocols). Default 1s.
//   --connect-timeout=DUR   resolving a name plus connecting upstream. Default 10s.
//   --max-connections=N     connections held at once; more are reset and logged. Default 200000.
//   --max-connections-per-subject=N
//                           connections one subject may hold at once. Default 4096.
//   --pipe-size=BYTES       splice pipe capacity (F_SETPIPE_SZ); 0 = kernel default (64 KiB).
//   --resolver-threads=N    getaddrinfo worker threads. Default 4.
//   --resolve-cache-ttl=DUR how long a resolved name is reused. Default 30s.
//   --listen-ipv4=ADDR, --listen-ipv6=ADDR
//                           where listeners bind: the redirect targets of locally generated
//                           traffic (default 127.0.0.1 and ::1).
//   --port-sockets=FIRST-LAST|none
//                           the inherited descriptors of the listening sockets leashd bound for
//                           the reserved port range (see proxy/held_port_sockets.h). Each must
//                           be a TCP socket bound on a listen address, or the proxy refuses to
//                           start; with the flag, a subject whose port has no socket here is a
//                           failed listener and the proxy binds nothing itself. Without it (a
//                           run without leashd) the proxy binds its own listeners.
// Signals: SIGTERM/SIGINT stop it; SIGHUP is ignored (policy changes come over PolicyStream).
// If leashd goes away the proxy keeps enforcing the last map it acked.
#include "proto/sidecar/decision_log.h"
#include "proxy/proxy_main.h"

int main(int argc, char** argv) {
  return leash::proxy::RunProxyMain(argc, argv, [](int fd, int feed_fd) {
    auto log = std::make_unique<leash::sidecar::AsyncDecisionLog>(
        fd, 8192, leash::sidecar::DecisionLineGate::Limits(), leash::v1::SURFACE_NETWORK);
    if (feed_fd >= 0) log->AttachFeed(feed_fd);
    leash::sidecar::AsyncDecisionLog* raw = log.get();
    return leash::proxy::SinkHandle{
        std::move(log), [raw] { return raw->lost(); },
        [raw](const leash::policystream::SubjectMap& map) {
          std::vector<std::pair<uint32_t, std::string>> accounts;
          for (const auto& [uid, entry] : map) {
            raw->SetLevel(uid, leash::sidecar::LevelOf(entry.policy.get()));
            accounts.emplace_back(uid, entry.account);
          }
          raw->SetAccounts(accounts);
        }};
  });
}
