#include "controlplane/main/daemon.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "controlplane/account_files_watch.h"
#include "base/atomic_file.h"
#include "controlplane/control_service.h"
#include "controlplane/loopback_resolvers.h"
#include "proto/host/exec_routes.h"
#include "controlplane/decision_feed.h"
#include "controlplane/decision_hub.h"
#include "controlplane/decision_log_file.h"
#include "controlplane/instance_lock.h"
#include "controlplane/floor_file.h"
#include "controlplane/holding_reader.h"
#include "controlplane/inbound_routed_netfilter.h"
#include "base/install_layout.h"
#include "controlplane/iptables_netfilter.h"
#include "controlplane/leftover_sidecars.h"
#include "controlplane/netfilter_factory.h"
#include "controlplane/passwd_accounts.h"
#include "controlplane/policy_store.h"
#include "proto/policystream/policy_stream_service.h"
#include "controlplane/port_map.h"
#include "controlplane/proxy_port_hold.h"
#include "controlplane/reconcile_loop.h"
#include "controlplane/reconciler.h"
#include "controlplane/release_all_subjects.h"
#include "controlplane/rtnl_route_rules.h"
#include "proto/sidecar/decision_log.h"
#include "base/exit_codes.h"
#include "base/stack_dump.h"
#include "proto/sidecar/watcher_handover.h"
#include "controlplane/sidecar_supervisor.h"
#include "controlplane/subject_directory.h"
#include "controlplane/port_holders.h"
#include "controlplane/systemd_notify.h"
#include "controlplane/tiered_policy_source.h"
#include "controlplane/tools_group.h"
#include "controlplane/unix_grpc_server.h"
#include "engine/config_defaults.h"
#include "engine/decision_record.h"
#include "engine/validate.h"
#include "tools_api/tools_service.h"

namespace leash::controlplane {
namespace {

void Say(const std::string& line) { std::fprintf(stderr, "leashd: %s\n", line.c_str()); }

int Refuse(const std::string& why) {
  Say(absl::StrCat("not starting: ", why));
  return base::kExitRefused;
}

void LogReport(const leash::v1::ReconcileReport& report) {
  if (!report.error().empty()) {
    Say(absl::StrCat("reconcile FAILED, nothing was changed: ", report.error()));
    return;
  }
  Say(absl::StrCat("reconcile: ", report.changes_size(), " changed, ", report.unchanged(),
                   " unchanged (", report.duration_us() / 1000.0, " ms)"));
  for (const leash::v1::SubjectChange& change : report.changes()) {
    Say(absl::StrCat("  ", change.change(), " ", change.account(), " (uid ", change.uid(), ")",
                     change.detail().empty() ? "" : ": " + change.detail()));
  }
  for (const std::string& warning : report.warnings()) Say(absl::StrCat("  ", warning));
  // The routes to running programs unseen: said at start and whenever a setting changes.
  static std::string said_routes;
  std::string routes;
  for (const leash::v1::ExecRoute& route : report.exec_routes()) {
    absl::StrAppend(&routes, "  exec route ", host::DescribeExecRoute(route), "\n");
  }
  if (!routes.empty() && routes != said_routes) {
    Say(absl::StrCat("the routes to running a program that raise no fanotify event:\n", routes));
    said_routes = routes;
  }
}

// Who a CheckTool call is judged for: the account asked for, or the caller's own. Root and
// the configured user (who runs the harness for its agents) may ask for any subject; anyone
// else only for itself.
// The tools server, once started. Its accept thread runs (and calls can arrive) before Start
// returns the server, so the handlers read it through this, null until then.
using ToolsServerRef = std::atomic<UnixGrpcServer*>;

std::optional<ucred> ToolsCaller(const ToolsServerRef& server,
                                 const grpc::ServerContextBase& context) {
  const UnixGrpcServer* const started = server.load();
  if (started == nullptr) return std::nullopt;
  return started->PeerOf(context);
}

tools::SubjectLookup MakeToolsLookup(const ToolsServerRef* server,
                                     const SubjectDirectory* subjects, uint32_t user_uid,
                                     sidecar::AsyncDecisionLog* log) {
  return [=](const grpc::ServerContextBase& context,
             const std::string& account) -> absl::StatusOr<tools::ToolSubject> {
    std::optional<ucred> peer = ToolsCaller(*server, context);
    if (!peer) return absl::UnauthenticatedError("the caller's credentials are unknown");
    std::optional<SubjectView> view =
        account.empty() ? subjects->ByUid(peer->uid) : subjects->ByAccount(account);
    if (!view) {
      return absl::NotFoundError(
          account.empty()
              ? absl::StrCat("uid ", peer->uid,
                             " is not a leashed subject; name the agent in `account`")
              : absl::StrCat("'", account, "' is not a leashed subject (see `leash status`)"));
    }
    // The caller's own subject (its UID or one of its subordinate UIDs) may check for itself.
    const std::optional<SubjectView> callers = subjects->ByUid(peer->uid);
    const bool own = callers && callers->state.account.uid == view->state.account.uid;
    if (peer->uid != 0 && peer->uid != user_uid && !own) {
      return absl::PermissionDeniedError(absl::StrCat(
          "uid ", peer->uid, " may not check tools for ", view->state.account.name));
    }
    // The subject's logging.level as of the last reconcile, and its account's name, before its
    // record is written.
    log->SetLevel(view->state.account.uid, sidecar::LevelOf(view->policy.get()));
    if (log->AccountOf(view->state.account.uid) != view->state.account.name) {
      log->SetAccounts({{view->state.account.uid, view->state.account.name}});
    }
    tools::ToolSubject subject;
    subject.uid = view->state.account.uid;
    subject.policy = view->policy;
    subject.fail_mode_without_policy = view->no_policy_fail_mode;
    return subject;
  };
}

// On the iptables fallback, which enforces one UID: closes the network of each of `agents`
// (every connection refused) rather than leave it unconfined, and returns what to say: the
// accounts closed, or why one could not be. `closed` remembers who is closed already.
std::string CloseOnFallback(IptablesNetfilter& fallback, const std::vector<Account>& agents,
                            std::set<uint32_t>& closed) {
  std::vector<std::string> names, failures;
  for (const Account& agent : agents) {
    if (closed.count(agent.uid) != 0) continue;
    if (absl::Status s = fallback.Close(agent.uid); !s.ok()) {
      failures.push_back(absl::StrCat(agent.name, " (uid ", agent.uid, "): ", s.message()));
      continue;
    }
    closed.insert(agent.uid);
    names.push_back(absl::StrCat(agent.name, " (uid ", agent.uid, ")"));
  }
  std::string said;
  if (!names.empty()) {
    said = absl::StrCat("the network of ", absl::StrJoin(names, ", "),
                        " is closed (every connection refused) rather than left unconfined; "
                        "`leash teardown` removes the closure");
  }
  if (!failures.empty()) {
    absl::StrAppend(&said, said.empty() ? "" : ". ", "CRITICAL: could not close the network of ",
                    absl::StrJoin(failures, "; "));
  }
  return said;
}

// With nftables in force: lifts the closures a refused start on the iptables fallback left (an
// agent it could not enforce) of every UID that now has its own chain in `nft`; they would
// refuse every connection of an agent nftables enforces. A closed UID without a chain keeps its
// closure. Reads nothing when the host has no legacy iptables filter table in this network
// namespace (then there is none). Returns what to say.
std::vector<std::string> LiftFallbackClosures(Netfilter& nft) {
  std::ifstream names("/proc/net/ip_tables_names");
  std::string table;
  bool legacy_filter = false;
  while (std::getline(names, table)) legacy_filter = legacy_filter || table == "filter";
  if (!legacy_filter) return {};
  absl::StatusOr<std::unique_ptr<IptablesNetfilter>> legacy = IptablesNetfilter::Create();
  if (!legacy.ok()) return {};
  absl::StatusOr<std::vector<uint32_t>> closed = (*legacy)->ListClosed();
  if (!closed.ok()) {
    return {absl::StrCat("warning: could not read the iptables fallback's closures: ",
                         closed.status().message())};
  }
  absl::StatusOr<std::vector<uint32_t>> chains = nft.ListSubjects();
  if (!chains.ok()) return {};
  std::vector<std::string> said;
  for (uint32_t uid : *closed) {
    if (std::find(chains->begin(), chains->end(), uid) == chains->end()) {
      said.push_back(absl::StrCat("uid ", uid, " keeps the iptables fallback's closure (every "
                                  "connection refused): it has no nftables chain"));
      continue;
    }
    absl::Status lifted = (*legacy)->Release(uid);
    said.push_back(lifted.ok() ? absl::StrCat("lifted the iptables fallback's closure of uid ",
                                              uid, ": nftables enforces it now")
                               : absl::StrCat("CRITICAL: could not lift the iptables fallback's "
                                              "closure of uid ", uid, " (every connection of it "
                                              "is still refused): ", lifted.message()));
  }
  return said;
}

// The name leashd's proxy port sockets carry in systemd's file-descriptor store.
constexpr char kProxyPortsFdName[] = "leash-proxy-ports";

// Puts `fds` in systemd's file-descriptor store (nothing without $NOTIFY_SOCKET): a restart of
// leashd under systemd then never lets go of them. systemd ignores a descriptor it already
// holds, so sending one twice is harmless.
void StoreInSystemd(const std::vector<int>& fds) {
  if (fds.empty()) return;
  if (absl::Status stored = StoreFdsInSystemd(kProxyPortsFdName, fds); !stored.ok()) {
    Say(absl::StrCat("warning: could not put ", fds.size(), " proxy port socket(s) in systemd's "
                     "file-descriptor store (", stored.message(), "); a restart lets go of them "
                     "for as long as it takes"));
  }
}

std::string AccountName(uint32_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) != 0 || found == nullptr) return "";
  return found->pw_name;
}

// "--port-sockets={fd:0}-{fd:N-1}" for `handed` inherited sockets.
std::string PortSocketsFlag(size_t handed) {
  return handed == 0 ? std::string("--port-sockets=none")
                     : absl::StrCat("--port-sockets={fd:0}-{fd:", handed - 1, "}");
}

// leashd holds `held` port sockets, and a spawn briefly holds a second copy of the `handed`
// ones; the rest is gRPC, the stores and the log. Raises the soft limit to the hard one if
// that is short.
absl::Status EnsureDescriptorsFor(size_t held, size_t handed) {
  const size_t sockets = held + handed;
  const rlim_t needed = sockets + 1024;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return absl::ErrnoToStatus(errno, "getrlimit");
  if (limit.rlim_cur >= needed) return absl::OkStatus();
  if (limit.rlim_max < needed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "leashd needs ", needed, " file descriptors to hold the proxy's ", held,
        " port sockets, and its hard limit is ", limit.rlim_max,
        "; raise it (LimitNOFILE= in leash.service, or `ulimit -Hn`)"));
  }
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return absl::ErrnoToStatus(errno, "setrlimit");
  return absl::OkStatus();
}

// leashd from start to stop, in the order RunDaemon runs its steps. What one step makes, a
// later one uses, so it lives here; members are declared in the order they are made, so they
// are destroyed in the reverse. A step that refuses to start says why and returns the exit
// code (nullopt: go on).
class Daemon {
 public:
  explicit Daemon(DaemonOptions options);

  void BlockSignals();
  std::optional<int> LoadFloorAndUser();
  void EnsureToolsSocketGroup();
  std::optional<int> OpenLogAndLock();
  std::optional<int> HoldProxyPorts();
  std::optional<int> SetUpNetfilter();
  void MakeReconcileLoop();
  std::optional<int> OpenFanotifyGroup();
  std::optional<int> StartAdminSocket();
  std::optional<int> StartSidecars();
  std::optional<int> FirstReconcile();
  std::optional<int> StartToolsSocket();
  void WritePidfile();
  // Tells systemd (Type=notify) that every subject is in force, and feeds its watchdog while no
  // reconcile pass is stuck.
  void TellSystemdReady();
  void WaitForStopSignal();
  int Stop();

 private:
  // The subjects the iptables fallback cannot enforce: closed, loudly (after every pass).
  void CloseAgentsOnFallback(const leash::v1::ReconcileReport& report);
  // Closing leashd's copy releases the host (every pending event allowed) once no watcher
  // holds one: on a deliberate stop's path only, after the watchers and the holding reader.
  void ReleaseFanotifyGroup() {
    if (const int fd = fanotify_group_.exchange(-1); fd >= 0) close(fd);
  }
  // After a give-up: the sidecars stopped, and the group kept and read by leashd's holding
  // reader, which denies every subject's event (fswatch/README.md, "After leashd gives up").
  void HoldAfterGiveUp();
  // Starts the holding reader on the group (nullopt), or says why it cannot.
  std::optional<std::string> StartHoldingReader();
  // Whether `uid` is a subject's, for the holding reader: one in force, or one of the accounts
  // leashd started with (an agent account, or the floor's user on a single-subject host), with
  // their subordinate UIDs.
  bool IsSubjectUid(uint32_t uid) const;
  // The proxy's port sockets for leash-proxy, said; its --port-sockets flag.
  std::string HandOverPortSockets();
  // Before every pass: binds the proxy ports not held yet; new ones go into systemd's store and
  // to a restarted leash-proxy. Returns what to say (once per change of who holds the rest).
  std::vector<std::string> RetakeProxyPorts();
  // Who holds the ports leashd does not, from the kernel's socket tables.
  std::string DescribeHolders(const std::vector<ProxyPortHold::Missing>& missing) const;
  // A critical network block in the decision log for each subject newly refused for want of a
  // proxy port (its chain refuses everything), with who holds the ports; once per change.
  void LogRefusedSubjects();
  std::vector<std::string> FswatchArgv() const;
  void ReleaseEveryChain();

  DaemonOptions options_;
  sigset_t signals_;
  // The floor and the user.
  absl::StatusOr<leash::v1::Config> floor_;
  leash::v1::Config effective_;
  PasswdAccounts accounts_;
  Account user_;
  std::vector<Account> agents_;
  bool single_subject_ = false;
  bool network_on_ = false;
  bool filesystem_on_ = false;
  bool tools_on_ = false;
  ToolsGroup tools_group_;
  // The decision log, the instance lock, the proxy's ports.
  int log_fd_ = -1;
  std::optional<InstanceLock> instance_;
  ProxyPortHold port_hold_;
  // The proxy's spec as last started (its port sockets, its feed), and who holds the ports
  // leashd does not, as last said (both touched by the reconcile thread only, after start).
  SidecarSpec proxy_spec_;
  std::string port_holders_;
  // leashd's own lines in the decision log (the refused subjects), and what each said last.
  std::unique_ptr<sidecar::AsyncDecisionLog> notes_log_;
  std::map<uint32_t, std::string> said_refused_;
  absl::BitGen bitgen_;
  policystream::PolicyStreamService stream_;
  std::unique_ptr<BindingStore> store_;
  std::unique_ptr<TieredPolicySource> policies_;
  SubjectDirectory subjects_;
  // The kernel side of the network surface: the chains, and the policy-routing refusals
  // applied with them (inbound_routing.h).
  std::unique_ptr<Netfilter> chains_;
  std::unique_ptr<RtnlRouteRules> route_rules_;
  std::unique_ptr<InboundRouting> inbound_routing_;
  std::unique_ptr<Netfilter> netfilter_;
  // The iptables fallback, when in use, and the agents whose network it has closed.
  IptablesNetfilter* fallback_ = nullptr;
  std::string fallback_reason_;
  std::set<uint32_t> closed_on_fallback_;
  // leashd's own loop.
  ReconcilerOptions reconcile_options_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<ReconcileLoop> loop_;
  absl::Notification stop_feeding_watchdog_;
  std::thread watchdog_feeder_;
  // The fanotify group is leashd's, kept for its whole life and handed to every watcher, so a
  // watcher's death does not close it (closing answers every pending event allow): what it had
  // not read stays queued, and what it read and never answered is answered by the standby that
  // takes over, through the pending table.
  std::atomic<int> fanotify_group_{-1};
  int pending_table_ = -1;
  // Taken over from watchers a killed leashd left running (leftover_sidecars.h), rather than
  // made: then the first watcher is a standby, handed the group once the holding reader stops.
  bool group_taken_over_ = false;
  // leashd's own reader of the group while no watcher may read it (holding_reader.h).
  absl::Mutex holding_mu_;
  std::unique_ptr<HoldingReader> holding_ ABSL_GUARDED_BY(holding_mu_);
  // Set by the supervisor's give-up; the main thread then holds (HoldAfterGiveUp).
  std::atomic<bool> hold_requested_{false};
  // Set (from the supervisor's monitor thread) when leashd gives up on a sidecar: the exit that
  // follows is for failure, and leaves every chain in place.
  std::atomic<bool> failed_{false};
  std::unique_ptr<SidecarSupervisor> supervisor_;
  // The live decision stream, and the sidecars' ends of their feeds.
  std::unique_ptr<DecisionHub> decision_hub_;
  std::unique_ptr<DecisionFeed> decision_feed_;
  std::vector<int> feed_ends_;
  std::unique_ptr<ControlService> control_;
  std::unique_ptr<UnixGrpcServer> admin_;
  // The admin server for its handlers, which can run before Start returns it.
  std::atomic<UnixGrpcServer*> admin_raw_{nullptr};
  std::unique_ptr<AccountFilesWatch> account_files_;
  // The tools socket.
  std::unique_ptr<sidecar::AsyncDecisionLog> tools_log_;
  std::unique_ptr<tools::ToolsService> tools_service_;
  // The tools service for status, which the admin socket serves before it is made.
  std::atomic<const tools::ToolsService*> tools_service_raw_{nullptr};
  std::unique_ptr<UnixGrpcServer> tools_server_;
  ToolsServerRef tools_server_raw_{nullptr};
  std::string pidfile_;
};

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {
  if (options_.admin_socket.empty()) options_.admin_socket = options_.run_dir + "/leash.sock";
  if (options_.tools_socket.empty()) options_.tools_socket = options_.run_dir + "/tools.sock";
  if (options_.proxy_binary.empty()) {
    options_.proxy_binary = base::FindLeashProgram("leash-proxy", "proxy", "controlplane/main");
  }
  if (options_.fswatch_binary.empty()) {
    options_.fswatch_binary = base::FindLeashProgram("leash-fswatch", "fswatch", "controlplane/main");
  }
}

// Signals are taken by the main thread alone (sigwait), so block them before any thread.
void Daemon::BlockSignals() {
  sigemptyset(&signals_);
  // SIGUSR2 is leashd's own: the supervisor's give-up tells the main thread to hold with it.
  for (int s : {SIGHUP, SIGTERM, SIGINT, SIGUSR2}) sigaddset(&signals_, s);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  base::InstallStackDumpHandler();
}

std::optional<int> Daemon::LoadFloorAndUser() {
  floor_ = LoadFloor(options_.config_path);
  if (!floor_.ok()) return Refuse(std::string(floor_.status().message()));
  for (const leash::v1::Finding& finding : engine::ValidateConfig(*floor_, "floor")) {
    Say(absl::StrCat(engine::SeverityName(finding.severity()), ": floor ", finding.field(),
                     ": ", finding.message()));
  }
  effective_ = engine::WithDefaults(*floor_);
  const std::string& name = floor_->user();
  // The same judgement `leash validate` reports as errors, so that a floor it passes is one
  // leashd starts on.
  engine::StartFacts facts;
  facts.user_exists = [this](absl::string_view user) -> absl::StatusOr<bool> {
    absl::StatusOr<std::optional<Account>> found = accounts_.Lookup(user);
    if (!found.ok()) return found.status();
    return found->has_value();
  };
  for (const leash::v1::Finding& finding :
       engine::ValidateStart(*floor_, options_.config_path, facts)) {
    if (engine::HasBlockingFinding({finding})) return Refuse(finding.message());
  }
  absl::StatusOr<std::optional<Account>> user = accounts_.Lookup(name);
  if (!user.ok()) return Refuse(std::string(user.status().message()));
  if (!user->has_value()) {
    return Refuse(absl::StrCat("the leashed user '", name, "' does not exist; run `leash init "
                               "--user ", name, "`"));
  }
  user_ = **user;
  absl::StatusOr<std::vector<Account>> agents = accounts_.ListAgentAccounts();
  if (!agents.ok()) return Refuse(std::string(agents.status().message()));
  agents_ = *std::move(agents);
  single_subject_ = agents_.empty();
  network_on_ = effective_.enforcers().network();
  filesystem_on_ = effective_.enforcers().filesystem();
  tools_on_ = effective_.enforcers().tools();
  Say(absl::StrCat("user ", name, " (uid ", user_.uid, "); ",
                   single_subject_ ? "no agent accounts: single-subject host"
                                   : absl::StrCat(agents_.size(), " agent account(s)"),
                   "; enforcers: network ", network_on_ ? "on" : "OFF", ", filesystem ",
                   filesystem_on_ ? "on" : "OFF", ", tools ", tools_on_ ? "on" : "OFF"));
  for (const auto& [on, binary] : {std::pair{network_on_, options_.proxy_binary},
                                   std::pair{filesystem_on_, options_.fswatch_binary}}) {
    if (on && access(binary.c_str(), X_OK) != 0) {
      return Refuse(absl::StrCat(binary, " is not installed, but the config enables its surface; "
                                         "install it (scripts/install) or turn the enforcer off"));
    }
  }
  return std::nullopt;
}

// The tools socket's group: Leash's own, made now if missing (an upgrade says so).
void Daemon::EnsureToolsSocketGroup() {
  if (!tools_on_) return;
  absl::StatusOr<ToolsGroup> ensured = EnsureToolsGroup(
      options_.tools_group.empty() ? kDefaultToolsGroup : options_.tools_group, floor_->user(),
      options_.tools_socket);
  if (ensured.ok()) {
    tools_group_ = *std::move(ensured);
  } else {
    // Root-only rather than the leashed user's group: CheckTool unreachable by the harness is
    // visible and fixable; a socket group that reads the policy is neither.
    tools_group_.name = "root";
    tools_group_.gid = 0;
    Say(absl::StrCat("warning: ", ensured.status().message(),
                     "; until then the tools socket is root's alone"));
  }
  for (const std::string& notice : tools_group_.notices) Say(notice);
}

std::optional<int> Daemon::OpenLogAndLock() {
  absl::StatusOr<int> log_fd = OpenDecisionLog(effective_.logging().decisions());
  if (!log_fd.ok()) return Refuse(std::string(log_fd.status().message()));
  log_fd_ = *log_fd;
  if (absl::Status dir = EnsureRuntimeDirectory(options_.run_dir); !dir.ok()) {
    return Refuse(std::string(dir.message()));
  }
  // One leashd per run folder and per network namespace. A second one would take the admin
  // socket and the pidfile over, or (on other folders) fight the first for the same chains and
  // ports: it refuses here, before touching any of them. The kernel drops the locks when
  // leashd ends, however it ends.
  absl::StatusOr<InstanceLock> instance = LockInstance(options_.run_dir, absl::Seconds(2));
  if (!instance.ok()) return Refuse(std::string(instance.status().message()));
  if (!instance->acquired()) {
    return Refuse(absl::StrCat(
        instance->held_by,
        ". Stop it first (`systemctl stop leash`, or SIGTERM to its pid); to make it pick up a "
        "change, send it SIGHUP instead"));
  }
  instance_ = *std::move(instance);
  return std::nullopt;
}

// The proxy's ports are leashd's from here to the end: bound now (a port a proxy left by a
// killed leashd still holds is taken once that proxy is stopped, in StartSidecars).
std::optional<int> Daemon::HoldProxyPorts() {
  if (network_on_) {
    if (absl::Status enough =
            EnsureDescriptorsFor(port_hold_.total_wanted(), port_hold_.wanted());
        !enough.ok()) {
      return Refuse(std::string(enough.message()));
    }
    // Under systemd, the sockets the previous leashd put in the service's file-descriptor
    // store come back first: the ports never left Leash's hands across the restart.
    size_t adopted = 0;
    std::vector<std::string> refused;
    for (const auto& [fd, name] : TakeListenFds()) {
      if (name != kProxyPortsFdName) {
        close(fd);
        continue;
      }
      if (absl::Status taken = port_hold_.Adopt(fd); taken.ok()) {
        ++adopted;
      } else {
        refused.push_back(std::string(taken.message()));
        close(fd);
      }
    }
    if (adopted > 0 || !refused.empty()) {
      Say(absl::StrCat("took back ", adopted, " proxy port socket(s) from systemd's "
                       "file-descriptor store", refused.empty() ? "" : "; closed ",
                       refused.empty() ? "" : absl::StrJoin(refused, "; ")));
    }
    port_hold_.TakeMissing();
    StoreInSystemd(port_hold_.AllDescriptors());
  }
  store_ = std::make_unique<BindingStore>(BindingStore::Options(options_.state_dir));
  policies_ = std::make_unique<TieredPolicySource>(options_.config_path, store_.get());
  return std::nullopt;
}

std::optional<int> Daemon::SetUpNetfilter() {
  if (!network_on_) return std::nullopt;
  NetfilterBackend backend = NetfilterBackend::kAuto;
  if (options_.netfilter_backend == "nftables") backend = NetfilterBackend::kNftables;
  if (options_.netfilter_backend == "iptables") backend = NetfilterBackend::kIptables;
  absl::StatusOr<NetfilterChoice> choice = ChooseNetfilter(backend);
  if (!choice.ok()) return Refuse(std::string(choice.status().message()));
  if (!choice->notice.empty()) std::fprintf(stderr, "%s\n", choice->notice.c_str());
  std::vector<Account> agent_accounts;
  std::vector<std::string> agent_names;
  for (const Account& agent : agents_) {
    if (agent.name == floor_->user()) continue;
    agent_accounts.push_back(agent);
    agent_names.push_back(agent.name);
  }
  if (absl::Status covered = CheckEnforcesEverySubject(*choice, floor_->user(), agent_names);
      !covered.ok()) {
    // A refusal is a failure, and a failure never un-confines: the agents nothing will
    // enforce are closed first.
    const std::string closed =
        CloseOnFallback(*choice->fallback, agent_accounts, closed_on_fallback_);
    return Refuse(absl::StrCat(covered.message(), closed.empty() ? "" : ". Meanwhile ", closed));
  }
  fallback_ = choice->fallback;
  fallback_reason_ = choice->fallback_reason;
  chains_ = std::move(choice->netfilter);
  absl::StatusOr<std::unique_ptr<RtnlRouteRules>> rules = RtnlRouteRules::Open();
  if (!rules.ok()) return Refuse(std::string(rules.status().message()));
  route_rules_ = std::move(*rules);
  inbound_routing_ = std::make_unique<InboundRouting>(route_rules_.get(),
                                                      SavedFwmarkAcceptPath(options_.run_dir));
  netfilter_ = std::make_unique<InboundRoutedNetfilter>(chains_.get(), inbound_routing_.get());
  absl::StatusOr<std::vector<std::string>> prepared = netfilter_->Prepare();
  if (!prepared.ok()) return Refuse(std::string(prepared.status().message()));
  for (const std::string& line : *prepared) std::fprintf(stderr, "%s\n", line.c_str());
  return std::nullopt;
}

void Daemon::MakeReconcileLoop() {
  ReconcilerOptions& o = reconcile_options_;
  o.configured_user = floor_->user();
  o.single_subject = single_subject_;
  o.ports_path = options_.state_dir + "/ports.json";
  o.network_enforced = network_on_;
  o.filesystem_enforced = filesystem_on_;
  o.ack_timeout = options_.ack_timeout;
  o.resolv_conf_path = options_.resolv_conf;
  // A port someone else bound while leashd was down carries no account's traffic: its account
  // moves to a fresh port, and no new account is given it.
  o.port_usable = [this](uint16_t port) { return port_hold_.Holds(port); };
  // A port another process held is taken back on the first pass after it lets go; a subject
  // without one is told who holds them.
  o.retake_ports = [this] { return RetakeProxyPorts(); };
  o.port_holders = [this] { return port_holders_; };
  if (tools_on_) {
    o.tools_max_request_bytes = static_cast<uint64_t>(options_.tools_limits.max_request_bytes);
  }
  reconciler_ =
      std::make_unique<Reconciler>(o, &accounts_, policies_.get(), netfilter_.get(), &stream_);
  // A pass that leaves something not in force (a chain, a listener, a sidecar's ack) is
  // followed by another after 5 s, then 10, 20, ... up to 80 s, until it is in force: a
  // squatted port freed, a transient netlink error, a respawned sidecar.
  loop_ = std::make_unique<ReconcileLoop>(
      [this] { return reconciler_->RunPass(); },
      [this](const leash::v1::ReconcileReport& report) {
        LogReport(report);
        subjects_.Update(reconciler_->subjects());
        LogRefusedSubjects();
        CloseAgentsOnFallback(report);
      },
      absl::Seconds(30), nullptr, options_.reconcile_retry);
  // A sidecar's ack that names other failed listeners (a respawned proxy that cannot bind a
  // port someone took meanwhile) asks for a pass: that subject is denied and its chain resets
  // its TCP instead of redirecting it there.
  stream_.SetOnAckChange([this](leash::v1::SidecarKind) { loop_->Request(); });
}

// An agent that appears on a host the fallback enforces cannot be enforced here, nor after a
// restart (which refuses): closed, loudly.
void Daemon::CloseAgentsOnFallback(const leash::v1::ReconcileReport& report) {
  if (fallback_ == nullptr || !report.error().empty()) return;
  absl::StatusOr<std::vector<Account>> now = accounts_.ListAgentAccounts();
  if (!now.ok()) return;
  std::vector<Account> appeared;
  for (const Account& a : *now) {
    if (a.name != floor_->user()) appeared.push_back(a);
  }
  const std::string closed = CloseOnFallback(*fallback_, appeared, closed_on_fallback_);
  if (closed.empty()) return;
  Say(absl::StrCat("CRITICAL: agent account(s) appeared, and enforcing several UIDs needs "
                   "nftables: ", fallback_reason_, ", and the iptables fallback enforces the "
                   "configured user ", floor_->user(), " alone. ", closed,
                   ". Make nf_tables available (modprobe nf_tables) and restart leash; until "
                   "then a restart refuses to start"));
}

std::optional<int> Daemon::OpenFanotifyGroup() {
  if (!filesystem_on_) return std::nullopt;
  absl::StatusOr<sidecar::PermissionGroup> group =
      sidecar::OpenPermissionGroup(!sidecar::KernelHasPidfdInfo());
  if (!group.ok()) return Refuse(std::string(group.status().message()));
  fanotify_group_.store(group->fd);
  absl::StatusOr<int> table = sidecar::PendingTable::Create();
  if (!table.ok()) return Refuse(std::string(table.status().message()));
  pending_table_ = *table;
  return std::nullopt;
}

std::optional<int> Daemon::StartAdminSocket() {
  SupervisorPolicy supervisor_policy;
  supervisor_ = std::make_unique<SidecarSupervisor>(&stream_, supervisor_policy,
                                                    [this](const std::string&) {
                                                      // The group is kept: the main thread
                                                      // stops the sidecars and holds it.
                                                      failed_.store(true);
                                                      hold_requested_.store(true);
                                                      kill(getpid(), SIGUSR2);
                                                    });
  // The live decision stream: every writer's feed ends here, and WatchDecisions reads it.
  decision_hub_ = std::make_unique<DecisionHub>([this](uint32_t uid) {
    const std::optional<SubjectView> view = subjects_.ByUid(uid);
    return view ? view->state.account.name : std::string();
  });
  absl::StatusOr<std::unique_ptr<DecisionFeed>> feed = DecisionFeed::Start(decision_hub_.get());
  if (!feed.ok()) return Refuse(std::string(feed.status().message()));
  decision_feed_ = *std::move(feed);
  ControlDeps deps;
  deps.decisions.hub = decision_hub_.get();
  if (const std::string& sink = effective_.logging().decisions(); sink != "stdout") {
    deps.decisions.log_path = sink;
  }
  deps.decisions.account_of = [this](uint32_t uid) { return decision_hub_->AccountOf(uid); };
  deps.decisions.is_subject = [this](const std::string& account) {
    return subjects_.ByAccount(account).has_value();
  };
  deps.config_path = options_.config_path;
  deps.store = store_.get();
  deps.accounts = &accounts_;
  deps.subjects = &subjects_;
  deps.loop = loop_.get();
  deps.stream = &stream_;
  deps.supervisor = supervisor_.get();
  deps.single_subject = single_subject_;
  deps.netfilter_description =
      netfilter_ ? netfilter_->Describe() : "off (enforcers.network: false)";
  deps.netfilter = netfilter_.get();
  deps.loopback_resolvers = [path = options_.resolv_conf] { return FindLoopbackResolvers(path); };
  deps.caller = [this](const grpc::ServerContextBase& context) -> std::optional<ucred> {
    const UnixGrpcServer* const started = admin_raw_.load();
    if (started == nullptr) return std::nullopt;
    return started->PeerOf(context);
  };
  deps.tools_would_be_blocks = [this]() -> std::vector<leash::v1::WouldBeBlocks> {
    const tools::ToolsService* const tools = tools_service_raw_.load();
    return tools == nullptr ? std::vector<leash::v1::WouldBeBlocks>()
                            : tools->would_be_blocks().Snapshot();
  };
  control_ = std::make_unique<ControlService>(deps);

  UnixSocketOptions admin_options;
  admin_options.name = "admin";
  admin_options.path = options_.admin_socket;
  admin_options.mode = 0600;
  admin_options.admit = [](const ucred& cred) { return cred.uid == 0; };
  // The largest request the CLI sends is a profile's text, which the CLI and the store cap at
  // engine::kMaxPolicyYamlBytes: room for one at the cap with its fields, set here rather than
  // left to gRPC's default, so the two limits are stated together (docs/OPERATIONS.md).
  absl::StatusOr<std::unique_ptr<UnixGrpcServer>> admin = UnixGrpcServer::Start(
      admin_options, {control_.get(), &stream_}, [](grpc::ServerBuilder& builder) {
        builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxAdminRequestBytes));
      });
  if (!admin.ok()) return Refuse(std::string(admin.status().message()));
  admin_ = *std::move(admin);
  admin_raw_.store(admin_.get());
  Say(absl::StrCat("admin socket ", options_.admin_socket, " (root only)"));
  return std::nullopt;
}

// Both sidecars reach leashd on the admin socket and write decisions to the inherited log.
std::vector<std::string> Daemon::FswatchArgv() const {
  std::vector<std::string> argv = {
      options_.fswatch_binary, "--socket=" + options_.admin_socket, "--decision-log-fd={log_fd}",
      "--fanotify-fd={fd:0}", "--pending-table-fd={fd:1}"};
  if (!options_.fswatch_mark_only_under.empty()) {
    argv.push_back("--mark-only-under=" + options_.fswatch_mark_only_under);
  }
  return argv;
}

std::string Daemon::HandOverPortSockets() {
  // A process binding ports in a loop holds each one only for an instant: a failed bind is
  // tried again for a while before the port counts as taken.
  const std::vector<ProxyPortHold::Missing> missing =
      port_hold_.TakeMissing(/*attempts=*/40, absl::Milliseconds(5));
  const size_t handed = port_hold_.Descriptors().size();
  Say(absl::StrCat("holding ", handed, " of ", port_hold_.wanted(),
                   " proxy port sockets (TCP and UDP, ", engine::kProxyPortFirst, "-",
                   engine::kProxyPortLast, " on 127.0.0.1",
                   port_hold_.ipv6_available() ? " and ::1" : "; no IPv6 here",
                   ") for leash-proxy, and ", port_hold_.total() - handed, " of ",
                   2 * port_hold_.ports(), " wildcards for every other address"));
  std::vector<ProxyPortHold::Missing> targets, elsewhere;
  for (const ProxyPortHold::Missing& m : missing) {
    (m.redirect_target ? targets : elsewhere).push_back(m);
  }
  if (!targets.empty()) {
    Say(absl::StrCat(
        "CRITICAL: ", targets.size(), " proxy port socket(s) are held by another process, "
        "bound while leashd was not running: ", ProxyPortHold::Describe(targets), " (",
        DescribeHolders(targets),
        "). An agent whose port this is moves to a fresh one, no account is given one again, "
        "and the single-subject port 18443 cannot move: its subject is denied all TCP (its "
        "chain resets it); leashd takes each back on the first reconcile after it is released"));
  }
  if (!elsewhere.empty()) {
    Say(absl::StrCat(
        "warning: another process holds ", elsewhere.size(), " port(s) of the proxy range on "
        "some address of this host, so leashd cannot hold them there: ",
        ProxyPortHold::Describe(elsewhere), ". No redirect goes there; `ss -ltunp` shows who"));
  }
  return PortSocketsFlag(handed);
}

void Daemon::LogRefusedSubjects() {
  if (notes_log_ == nullptr) return;
  std::map<uint32_t, std::string> refused;
  std::vector<std::pair<uint32_t, std::string>> accounts;
  for (const auto& [uid, state] : reconciler_->subjects()) {
    if (state.in_discovery && state.chain && state.chain->port == 0) {
      refused[uid] = state.problem;
      accounts.emplace_back(uid, state.account.name);
    }
  }
  notes_log_->SetAccounts(accounts);
  for (const auto& [uid, problem] : refused) {
    auto said = said_refused_.find(uid);
    if (said != said_refused_.end() && said->second == problem) continue;
    leash::v1::DecisionRecord record;
    record.set_ts(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()));
    record.set_ref(engine::MakeRef(absl::Uniform<uint64_t>(bitgen_)));
    record.set_uid(uid);
    record.set_surface("network");
    record.set_action("block");
    record.set_reason(problem);
    record.set_severity("critical");
    notes_log_->Record(std::move(record));
  }
  said_refused_ = std::move(refused);
}

std::string Daemon::DescribeHolders(const std::vector<ProxyPortHold::Missing>& missing) const {
  std::set<std::pair<bool, uint16_t>> wanted;
  for (const ProxyPortHold::Missing& m : missing) wanted.insert({m.udp, m.port});
  const std::vector<PortHolder> holders = FindPortHolders(wanted);
  std::string said = DescribePortHolders(holders, &AccountName);
  for (const PortHolder& holder : holders) {
    for (uint16_t port : holder.tcp_ports) wanted.erase({false, port});
    for (uint16_t port : holder.udp_ports) wanted.erase({true, port});
  }
  std::set<uint16_t> unfound_tcp, unfound_udp;
  for (const auto& [udp, port] : wanted) (udp ? unfound_udp : unfound_tcp).insert(port);
  if (!unfound_tcp.empty() || !unfound_udp.empty()) {
    absl::StrAppend(&said, said.empty() ? "" : "; ",
                    "no holder found in the socket tables for",
                    unfound_tcp.empty() ? "" : " tcp ", FoldPorts(unfound_tcp),
                    unfound_udp.empty() ? "" : " udp ", FoldPorts(unfound_udp),
                    " (a TCP socket only bound shows in `ss -tanp state bound-inactive`)");
  }
  return said;
}

std::vector<std::string> Daemon::RetakeProxyPorts() {
  if (!network_on_ || port_hold_.total() == port_hold_.total_wanted()) {
    port_holders_.clear();
    return {};
  }
  const std::vector<int> before = port_hold_.AllDescriptors();
  const size_t handed_before = port_hold_.Descriptors().size();
  const std::vector<ProxyPortHold::Missing> missing = port_hold_.TakeMissing();
  std::vector<std::string> said;
  const std::set<int> had(before.begin(), before.end());
  std::vector<int> taken;
  for (int fd : port_hold_.AllDescriptors()) {
    if (had.count(fd) == 0) taken.push_back(fd);
  }
  StoreInSystemd(taken);
  const size_t handed = port_hold_.Descriptors().size();
  if (handed != handed_before && supervisor_ != nullptr) {
    // The proxy only listens on sockets leashd hands it at spawn: it is restarted on the new
    // set (its listeners are leashd's sockets, so none is lost; connections in flight are cut).
    SidecarSpec spec = proxy_spec_;
    const int feed = spec.inherited_fds.back();
    spec.inherited_fds = port_hold_.Descriptors();
    for (std::string& arg : spec.argv) {
      if (absl::StartsWith(arg, "--port-sockets=")) arg = PortSocketsFlag(handed);
      if (absl::StartsWith(arg, "--decision-feed-fd=")) {
        arg = absl::StrCat("--decision-feed-fd={fd:", spec.inherited_fds.size(), "}");
      }
    }
    spec.inherited_fds.push_back(feed);
    if (absl::Status replaced = supervisor_->Replace(spec); replaced.ok()) {
      proxy_spec_ = std::move(spec);
      said.push_back(absl::StrCat("took back ", handed - handed_before, " proxy port socket(s) "
                                  "another process had held; leash-proxy restarted with ",
                                  handed, " of ", port_hold_.wanted()));
    } else {
      said.push_back(absl::StrCat("warning: ", replaced.message()));
    }
  }
  const std::string holders = missing.empty() ? "" : DescribeHolders(missing);
  if (holders != port_holders_ && !missing.empty()) {
    said.push_back(absl::StrCat("critical: ", missing.size(), " proxy port socket(s) still held "
                                "by another process: ", ProxyPortHold::Describe(missing),
                                holders.empty() ? "" : "; ", holders));
  }
  port_holders_ = holders;
  return said;
}

std::optional<int> Daemon::StartSidecars() {
  std::vector<std::string> proxy_argv = {options_.proxy_binary,
                                         "--admin-socket=" + options_.admin_socket,
                                         "--decision-log-fd={log_fd}"};
  // With the lock held, no live leashd owns a sidecar started against this admin socket: any
  // still running were left by one that was killed, and would hold the ports and the fanotify
  // group against ours. Stopped only now, when ours are about to start: until then they still
  // enforce the last map they had (a start refused above leaves them so).
  // A leftover watcher's group is taken over first, so that stopping the leftovers does not
  // close it (its marks would go, and every subject's opens go unjudged until a new watcher
  // marks a new group). Nothing reads it from their stop until the holding reader starts: an
  // open on its marks waits meanwhile, and this thread opens nothing but /proc.
  if (filesystem_on_) {
    std::vector<std::string> lines;
    if (std::optional<LeftoverGroup> taken =
            TakeLeftoverGroup(options_.fswatch_binary, options_.admin_socket, lines);
        taken && sidecar::PermissionGroupFlags(taken->group_fd).ok() &&
        sidecar::PendingTable::Map(taken->pending_table_fd).ok()) {
      close(fanotify_group_.exchange(taken->group_fd));  // new, unmarked: nothing pending
      close(pending_table_);
      pending_table_ = taken->pending_table_fd;
      group_taken_over_ = true;
    } else if (taken) {
      close(taken->group_fd);
      close(taken->pending_table_fd);
      lines.push_back("the leftover watcher's descriptors are not a fanotify group and a pending "
                      "table; a new group is made");
    }
    for (const std::string& line : lines) Say(line);
  }
  for (const std::string& line : StopLeftoverSidecars(
           {options_.fswatch_binary, options_.proxy_binary}, options_.admin_socket)) {
    Say(line);
  }
  if (group_taken_over_) {
    if (std::optional<std::string> why = StartHoldingReader()) {
      return Refuse(absl::StrCat("cannot read the fanotify group taken over from the previous "
                                 "leashd's watchers: ", *why));
    }
    Say("leashd reads the group taken over (every subject's event denied) until its first "
        "watcher is ready to take it");
  }
  if (network_on_) {
    proxy_argv.push_back(HandOverPortSockets());
    notes_log_ = std::make_unique<sidecar::AsyncDecisionLog>(
        fcntl(log_fd_, F_DUPFD_CLOEXEC, 3), 8192, sidecar::DecisionLineGate::Limits(),
        leash::v1::SURFACE_NETWORK);
    absl::StatusOr<int> notes_feed = decision_feed_->NewWriterEnd();
    if (!notes_feed.ok()) return Refuse(std::string(notes_feed.status().message()));
    notes_log_->AttachFeed(*notes_feed);
  }
  for (const auto& [on, name, kind, argv] :
       {std::tuple{filesystem_on_, "leash-fswatch", leash::v1::SIDECAR_KIND_FSWATCH,
                   FswatchArgv()},
        std::tuple{network_on_, "leash-proxy", leash::v1::SIDECAR_KIND_PROXY, proxy_argv}}) {
    if (!on) continue;
    SidecarSpec spec;
    spec.name = name;
    spec.kind = kind;
    spec.argv = argv;
    spec.decision_log_fd = log_fd_;
    spec.heartbeat_timeout = options_.heartbeat_timeout;
    if (kind == leash::v1::SIDECAR_KIND_PROXY) spec.inherited_fds = port_hold_.Descriptors();
    if (kind == leash::v1::SIDECAR_KIND_FSWATCH) {
      spec.inherited_fds = {fanotify_group_.load(), pending_table_};
    }
    // The sidecar's end of its feed, kept by leashd for every respawn (and the standby).
    absl::StatusOr<int> feed = decision_feed_->NewWriterEnd();
    if (!feed.ok()) return Refuse(std::string(feed.status().message()));
    feed_ends_.push_back(*feed);
    spec.argv.push_back(
        absl::StrCat("--decision-feed-fd={fd:", spec.inherited_fds.size(), "}"));
    spec.inherited_fds.push_back(*feed);
    if (kind == leash::v1::SIDECAR_KIND_PROXY) proxy_spec_ = spec;
    if (kind == leash::v1::SIDECAR_KIND_FSWATCH) {
      spec.standby_args = {"--standby", "--ready-fd={ready_fd}"};
      spec.takeover_signal = sidecar::TakeOverSignal();
      spec.heartbeat_timeout = options_.fswatch_heartbeat_timeout;
      if (group_taken_over_) {
        spec.first_as_standby = true;
        spec.before_first_takeover = [this] {
          absl::MutexLock lock(&holding_mu_);
          if (holding_ != nullptr) holding_->Stop();
        };
      }
    }
    if (absl::Status started = supervisor_->Start(spec); !started.ok()) {
      return Refuse(std::string(started.message()));
    }
  }
  return std::nullopt;
}

std::optional<int> Daemon::FirstReconcile() {
  loop_->Start();
  // A change to passwd, group, subuid, subgid or nsswitch.conf asks for a pass by itself: an
  // added subordinate range is part of its subject at once, not at the next SIGHUP.
  absl::StatusOr<std::unique_ptr<AccountFilesWatch>> account_files = AccountFilesWatch::Start(
      options_.account_files_dir, AccountFilesWatch::DefaultNames(),
      [this] { loop_->Request(); });
  if (account_files.ok()) {
    account_files_ = *std::move(account_files);
  } else {
    Say(absl::StrCat("warning: cannot watch ", options_.account_files_dir, " (",
                     account_files.status().message(),
                     "); a change to the account database takes effect at the next SIGHUP"));
  }
  const leash::v1::ReconcileReport first = loop_->RequestAndWait(absl::Minutes(2));
  if (!first.error().empty()) {
    loop_->Stop();
    supervisor_->Stop();
    admin_->Shutdown();
    return Refuse(absl::StrCat("the first reconcile failed: ", first.error()));
  }
  if (netfilter_ && fallback_ == nullptr) {
    for (const std::string& line : LiftFallbackClosures(*netfilter_)) Say(line);
  }
  return std::nullopt;
}

std::optional<int> Daemon::StartToolsSocket() {
  if (!tools_on_) return std::nullopt;
  tools_log_ = std::make_unique<sidecar::AsyncDecisionLog>(
      fcntl(log_fd_, F_DUPFD_CLOEXEC, 3), 8192, sidecar::DecisionLineGate::Limits(),
      leash::v1::SURFACE_TOOLS);
  absl::StatusOr<int> feed = decision_feed_->NewWriterEnd();
  if (!feed.ok()) return Refuse(std::string(feed.status().message()));
  tools_log_->AttachFeed(*feed);
  ToolsServerRef* const raw = &tools_server_raw_;
  tools::ToolsServiceOptions tools_options;
  tools_options.sink = tools_log_.get();
  tools_options.lookup = MakeToolsLookup(raw, &subjects_, user_.uid, tools_log_.get());
  tools_options.caller_uid = [raw](const grpc::ServerContextBase& context)
      -> std::optional<uint32_t> {
    std::optional<ucred> peer = ToolsCaller(*raw, context);
    if (!peer) return std::nullopt;
    return peer->uid;
  };
  tools_options.limits = options_.tools_limits;
  tools_options.caller_not_reading = [raw](const grpc::ServerContextBase& context) {
    const UnixGrpcServer* const started = raw->load();
    return started != nullptr && started->PeerIsNotReading(context);
  };
  tools_options.cut_connections = [raw](uint32_t uid) {
    if (UnixGrpcServer* const started = raw->load(); started != nullptr) {
      started->CutConnectionsOf(uid);
    }
  };
  absl::StatusOr<std::unique_ptr<tools::ToolsService>> service =
      tools::ToolsService::Create(std::move(tools_options));
  if (!service.ok()) return Refuse(std::string(service.status().message()));
  tools_service_ = *std::move(service);
  tools_service_raw_.store(tools_service_.get());
  UnixSocketOptions socket;
  socket.name = "tools";
  socket.path = options_.tools_socket;
  socket.mode = 0660;
  socket.group = tools_group_.gid;
  socket.admit = [](const ucred&) { return true; };  // the socket's group decides
  socket.max_connections_per_uid = options_.tools_limits.max_connections_per_account;
  // gRPC enforces the calls-per-connection cap only once a client has acknowledged the SETTINGS
  // that carry it; before that the relay holds the caller to the same number.
  socket.max_streams_before_settings_ack = options_.tools_limits.max_calls_per_account;
  socket.on_relay_cut = [this](const ucred& cred, const std::string& why) {
    tools_service_->CutConnectionsOf(cred.uid, why);
  };
  absl::StatusOr<std::unique_ptr<UnixGrpcServer>> server =
      UnixGrpcServer::Start(socket, {}, [this](grpc::ServerBuilder& builder) {
        tools::RegisterToolsService(builder, *tools_service_);
      });
  if (!server.ok()) return Refuse(std::string(server.status().message()));
  tools_server_ = *std::move(server);
  tools_server_raw_.store(tools_server_.get());
  const tools::ToolsSocketLimits& limits = options_.tools_limits;
  Say(absl::StrCat("tools socket ", options_.tools_socket, " (0660, group ", tools_group_.name,
                   " ", tools_group_.gid, "); per account: ", limits.max_connections_per_account,
                   " connections, ", limits.max_calls_per_account,
                   " calls in flight, requests up to ", limits.max_request_bytes, " bytes"));
  return std::nullopt;
}

// The pidfile is how a host without systemd signals leashd (scripts/reload-policy); it is
// written atomically with its mode stated.
void Daemon::WritePidfile() {
  pidfile_ = absl::StrCat(options_.run_dir, "/", kPidfileName);
  if (absl::Status written = base::WriteFileAtomically(pidfile_, absl::StrCat(getpid(), "\n"), 0644);
      !written.ok()) {
    Say(absl::StrCat("warning: ", written.message()));
  }
  Say(absl::StrCat("running (pid ", getpid(), "); SIGHUP reconciles, SIGTERM stops"));
}

void Daemon::TellSystemdReady() {
  // Ready means in force: the first reconcile has applied every subject's chain and both
  // sidecars have acknowledged its maps, so `systemctl start` returns when enforcement is real.
  if (absl::Status told = NotifySystemd(absl::StrCat(
          "READY=1\nMAINPID=", getpid(), "\nSTATUS=every subject in force; SIGHUP reconciles"));
      !told.ok()) {
    Say(absl::StrCat("warning: ", told.message()));
  }
  const std::optional<absl::Duration> interval = WatchdogPingInterval();
  if (!interval) return;
  Say(absl::StrCat("feeding systemd's watchdog every ", absl::FormatDuration(*interval),
                   " while no reconcile pass runs past its limit"));
  watchdog_feeder_ = std::thread([this, every = *interval] {
    while (!stop_feeding_watchdog_.WaitForNotificationWithTimeout(every)) {
      // A pass stuck past its limit (its stacks are dumped) starves the watchdog, and systemd
      // restarts leashd: an exit for failure, which keeps every chain.
      if (loop_->Stuck()) continue;
      if (absl::Status fed = NotifySystemd("WATCHDOG=1"); !fed.ok()) {
        Say(absl::StrCat("warning: ", fed.message()));
      }
    }
  });
}

void Daemon::WaitForStopSignal() {
  while (true) {
    int signal = 0;
    if (sigwait(&signals_, &signal) != 0) continue;
    if (signal == SIGHUP) {
      Say("SIGHUP: reconcile requested");
      loop_->Request();
      continue;
    }
    if (signal == SIGUSR2) {
      if (hold_requested_.exchange(false)) HoldAfterGiveUp();
      continue;
    }
    if (!failed_.load()) Say(absl::StrCat("signal ", signal, ": stopping"));
    return;
  }
}

// Stops the sidecars; a deliberate stop also releases every chain. Returns the exit code.
int Daemon::Stop() {
  stop_feeding_watchdog_.Notify();
  if (watchdog_feeder_.joinable()) watchdog_feeder_.join();
  NotifySystemd("STOPPING=1").IgnoreError();  // nothing to do about a gone systemd
  account_files_.reset();  // no pass is asked for once stopping
  loop_->Stop();
  if (tools_server_) tools_server_->Shutdown();
  admin_->Shutdown();
  supervisor_->Stop();
  {
    absl::MutexLock lock(&holding_mu_);
    if (holding_ != nullptr) {
      holding_->Stop();
      Say(absl::StrCat("the holding reader answered ", holding_->denied(), " subject event(s) "
                       "deny and ", holding_->allowed(), " other(s) allow"));
    }
  }
  // Every watcher is gone: nothing reads the group, so it is closed before anything here opens
  // a file (the kernel answers every pending event allow, which releases the host:
  // docs/ARCHITECTURE.md, rule F4). Only a deliberate stop comes here.
  ReleaseFanotifyGroup();
  if (pending_table_ >= 0) close(pending_table_);
  // A failure never un-confines: an exit for failure leaves every chain in place, so a leashed
  // UID's TCP is still redirected, now to a port nobody listens on (refused), and its UDP still
  // dropped, until a new leashd takes the chains over. Only a deliberate stop releases.
  if (netfilter_ && failed_.load()) {
    Say("exiting for failure: every chain is left in place, so every subject's network stays "
        "closed (connections refused) until leashd runs again; `systemctl start leash` (after "
        "`systemctl reset-failed leash` if systemd gave up) takes them over, `leash teardown` "
        "releases them by hand");
  } else if (netfilter_) {
    ReleaseEveryChain();
  }
  unlink(pidfile_.c_str());
  for (int fd : feed_ends_) close(fd);
  close(log_fd_);
  // A stop for failure is a refusal to go on: systemd restarts leash, and `leash teardown
  // --unless-failed` keeps the chains (cli/service_stop.cc).
  return failed_.load() ? base::kExitRefused : base::kExitOk;
}

bool Daemon::IsSubjectUid(uint32_t uid) const {
  if (subjects_.ByUid(uid).has_value()) return true;
  auto holds = [uid](const Account& account) {
    if (account.uid == uid) return true;
    for (const engine::UidRange& range : account.subordinate_uids) {
      if (range.Contains(uid)) return true;
    }
    return false;
  };
  // Before the first pass: the accounts leashd started with (the configured user is a subject
  // only on a single-subject host).
  return single_subject_ ? holds(user_) : std::any_of(agents_.begin(), agents_.end(), holds);
}

std::optional<std::string> Daemon::StartHoldingReader() {
  const int group = fanotify_group_.load();
  if (group < 0) return std::string("leashd holds no group");
  absl::StatusOr<sidecar::PendingTable*> table = sidecar::PendingTable::Map(pending_table_);
  if (!table.ok()) return std::string(table.status().message());
  absl::StatusOr<std::unique_ptr<HoldingReader>> reader = HoldingReader::Start(
      group, *table, [this](uint32_t uid) { return IsSubjectUid(uid); });
  if (!reader.ok()) return std::string(reader.status().message());
  absl::MutexLock lock(&holding_mu_);
  holding_ = *std::move(reader);
  return std::nullopt;
}

void Daemon::HoldAfterGiveUp() {
  // Both sidecars and the standby, stopped and reaped: from then on nobody reads the group
  // until the holding reader does, and nothing here opens a file meanwhile.
  supervisor_->Stop();
  if (fanotify_group_.load() < 0) {
    Say("gave up: the sidecars are stopped; leashd stays running with every chain in place "
        "(each subject's network closed) until it is stopped or restarted");
    return;
  }
  if (std::optional<std::string> why = StartHoldingReader()) {
    // Nobody can read the group: kept, it would hold every open on the marked filesystems
    // forever. The last resort is rule F4's release, said loudly.
    Say(absl::StrCat("CRITICAL: gave up, and leashd cannot read the fanotify group itself (", *why,
                     "): closing it, which answers every pending event allow; the filesystem "
                     "is not enforced until leash is restarted"));
    ReleaseFanotifyGroup();
    return;
  }
  Say("gave up: the sidecars are stopped; leashd stays running, keeps the fanotify group and "
      "answers it itself: every subject's open and exec denied, everyone else's allowed, and "
      "every chain stays in place (each subject's network closed). `systemctl restart leash` "
      "once the cause is fixed");
}

void Daemon::ReleaseEveryChain() {
  std::vector<uint32_t> uids;
  for (const auto& [uid, state] : reconciler_->subjects()) uids.push_back(uid);
  if (absl::StatusOr<PortMap> ports = PortMap::Load(reconcile_options_.ports_path); ports.ok()) {
    for (const PortMap::Assignment& a : ports->All()) uids.push_back(a.uid);
  }
  // With the chains, the policy-routing block and the host's tcp_fwmark_accept.
  const Released released = ReleaseAllSubjects(*netfilter_, uids, inbound_routing_.get());
  Say(released.chains.ok() ? absl::StrCat("released ", released.subjects, " subject chain(s)")
                           : absl::StrCat("releasing chains: ", released.chains.message()));
  Say(released.routing.ok() ? "released the policy-routing rules"
                            : std::string(released.routing.message()));
}

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  // Heap-allocated: its threads (the loop, the supervisor, the servers) reach it until Stop.
  auto daemon = std::make_unique<Daemon>(options);
  daemon->BlockSignals();
  if (std::optional<int> exit_code = daemon->LoadFloorAndUser()) return *exit_code;
  daemon->EnsureToolsSocketGroup();
  for (auto step : {&Daemon::OpenLogAndLock, &Daemon::HoldProxyPorts, &Daemon::SetUpNetfilter}) {
    if (std::optional<int> exit_code = ((*daemon).*step)()) return *exit_code;
  }
  daemon->MakeReconcileLoop();
  for (auto step : {&Daemon::OpenFanotifyGroup, &Daemon::StartAdminSocket,
                    &Daemon::StartSidecars, &Daemon::FirstReconcile, &Daemon::StartToolsSocket}) {
    if (std::optional<int> exit_code = ((*daemon).*step)()) return *exit_code;
  }
  daemon->WritePidfile();
  daemon->TellSystemdReady();
  daemon->WaitForStopSignal();
  return daemon->Stop();
}

}  // namespace leash::controlplane
