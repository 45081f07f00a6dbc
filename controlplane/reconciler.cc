#include "controlplane/reconciler.h"

#include "base/read_file.h"
#include "proto/host/exec_routes.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/atomic_file.h"
#include "controlplane/port_map.h"
#include "controlplane/resolv_conf.h"
#include "controlplane/subordinate_plan.h"
#include "engine/inert_entries.h"
#include "engine/network_entry.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace leash::controlplane {
namespace {

void AddChange(leash::v1::ReconcileReport& report, const Account& account, const char* change,
               const std::string& detail) {
  leash::v1::SubjectChange* entry = report.add_changes();
  entry->set_account(account.name);
  entry->set_uid(account.uid);
  entry->set_change(change);
  entry->set_detail(detail);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

// What a CheckTool request carries besides its inputs (the tool's name, the account, protobuf
// framing), generously.
constexpr uint64_t kToolRequestOverhead = 64 << 10;

// A subject whose tools.max_input_bytes the tools socket's request cap would cut short: calls
// in between are refused by gRPC (RESOURCE_EXHAUSTED, not logged) rather than judged by the
// policy. "" when it fits, or when there is no tools socket or the tools enforcer is off.
std::string ToolsTransportWarning(const std::string& account, const leash::v1::Config& policy,
                                  uint64_t max_request_bytes) {
  if (max_request_bytes == 0 || !policy.enforcers().tools()) return "";
  const uint64_t max_input = policy.tools().max_input_bytes();
  // Compared without overflow: a max_input_bytes near 2^64 means "no limit".
  if (max_input <= max_request_bytes && max_request_bytes - max_input >= kToolRequestOverhead) {
    return "";
  }
  // The flag takes an int: past that, no value fits, and the policy's bound cannot be reached.
  constexpr uint64_t kLargestFlag = std::numeric_limits<int>::max();
  const std::string fix =
      max_input <= kLargestFlag - kToolRequestOverhead
          ? absl::StrCat("start leashd with --tools-max-request-bytes=",
                         max_input + kToolRequestOverhead, " or more")
          : absl::StrCat("lower tools.max_input_bytes to ", kLargestFlag - kToolRequestOverhead,
                         " or less (the largest request the tools socket can take is ",
                         kLargestFlag, " bytes)");
  return absl::StrCat("warning: ", account, ": tools.max_input_bytes is ", max_input,
                      " but the tools socket takes requests of at most ", max_request_bytes,
                      " bytes, so larger calls are refused by the transport (unlogged) instead "
                      "of judged by the policy; ", fix);
}

}  // namespace

// The subordinate UIDs `state`'s chain holds in the kernel; with no chain (the network
// enforcer off: nothing to wait for), `otherwise`.
static std::vector<engine::UidRange> UidsInChain(const SubjectState& state,
                                                 const std::vector<engine::UidRange>& otherwise) {
  return state.chain ? state.chain->subordinate_uids : otherwise;
}

void AppendIdRanges(const std::vector<engine::UidRange>& ranges,
                    google::protobuf::RepeatedPtrField<leash::v1::IdRange>* out) {
  for (const engine::UidRange& range : ranges) {
    leash::v1::IdRange* added = out->Add();
    added->set_first(range.first);
    added->set_last(range.last);
  }
}

std::string Fingerprint(const leash::v1::SubjectPolicy& policy) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  policy.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

Reconciler::Reconciler(ReconcilerOptions options, AccountSource* accounts,
                       PolicySource* policies, Netfilter* netfilter,
                       policystream::PolicyStreamService* stream)
    : options_(std::move(options)),
      accounts_(accounts),
      policies_(policies),
      netfilter_(netfilter),
      stream_(stream) {}

leash::v1::SubjectPolicy Reconciler::NoPolicy(const Desired& desired, const std::string& reason,
                                              const std::string& floor_fail_mode) const {
  leash::v1::SubjectPolicy policy;
  policy.set_uid(desired.account.uid);
  policy.set_account(desired.account.name);
  policy.set_port(desired.port);
  policy.mutable_no_policy()->set_reason(reason);
  policy.mutable_no_policy()->set_fail_mode(floor_fail_mode);
  SetSubordinateIds(desired, policy);
  return policy;
}

void Reconciler::SetSubordinateIds(const Desired& desired, leash::v1::SubjectPolicy& policy) {
  policy.clear_subordinate_uids();
  policy.clear_subordinate_gids();
  AppendIdRanges(desired.subordinate_uids, policy.mutable_subordinate_uids());
  AppendIdRanges(desired.subordinate_gids, policy.mutable_subordinate_gids());
  policy.clear_subordinate_uids_in_chain();
  AppendIdRanges(desired.uids_in_chain, policy.mutable_subordinate_uids_in_chain());
  policy.clear_subid_owners();
  for (const std::string& owner : desired.account.subordinate_owners) policy.add_subid_owners(owner);
}

void Reconciler::PublishAndWait(const std::vector<leash::v1::SubjectPolicy>& subjects,
                                leash::v1::ReconcileReport& report) {
  if (subjects.empty()) return;
  const uint64_t version = stream_->Publish(subjects);
  auto wait = [&](bool enforced, leash::v1::SidecarKind kind, const char* name) {
    if (!enforced) return;
    absl::Status acked = stream_->WaitForAck(kind, version, options_.ack_timeout);
    if (!acked.ok()) {
      report.add_warnings(absl::StrCat("critical: ", name, " has not put map version ", version,
                                       " in force: ", acked.message()));
      AddNotInForce(report, absl::StrCat(name, " has not put map version ", version, " in force"));
    }
  };
  // The watcher first: a new subject is denied in the watcher before its chain goes in.
  wait(options_.filesystem_enforced, leash::v1::SIDECAR_KIND_FSWATCH, "the filesystem watcher");
  wait(options_.network_enforced, leash::v1::SIDECAR_KIND_PROXY, "the proxy");
}

void Reconciler::AddNotInForce(leash::v1::ReconcileReport& report, const std::string& line) {
  for (const std::string& present : report.not_in_force()) {
    if (present == line) return;
  }
  report.add_not_in_force(line);
  report.set_retry(true);
}

std::set<uint32_t> Reconciler::UnboundListeners() const {
  if (!options_.network_enforced) return {};
  const policystream::SidecarState proxy = stream_->State(leash::v1::SIDECAR_KIND_PROXY);
  return std::set<uint32_t>(proxy.failed_uids.begin(), proxy.failed_uids.end());
}

void Reconciler::CheckSidecarsInForce(leash::v1::ReconcileReport& report) {
  const uint64_t latest = stream_->version();
  if (latest == 0) return;
  auto check = [&](bool enforced, leash::v1::SidecarKind kind, const char* name) {
    if (!enforced) return;
    const policystream::SidecarState state = stream_->State(kind);
    if (!state.connected || state.acked_version < latest) {
      AddNotInForce(report, absl::StrCat(name, " has not put map version ", latest, " in force"));
      return;
    }
    // The watcher acks a map once it decides by it, and says in the ack when some of the marks
    // that map needs would not go on: opens on those filesystems are not judged. (The proxy's
    // ack error names listeners that would not bind; those subjects are reported by name.)
    if (kind == leash::v1::SIDECAR_KIND_FSWATCH && !state.last_ack_error.empty()) {
      const std::string line = absl::StrCat(name, " put map version ", state.acked_version,
                                            " in force, but: ", state.last_ack_error);
      report.add_warnings(absl::StrCat("critical: ", line));
      AddNotInForce(report, line);
    }
  };
  check(options_.filesystem_enforced, leash::v1::SIDECAR_KIND_FSWATCH, "the filesystem watcher");
  check(options_.network_enforced, leash::v1::SIDECAR_KIND_PROXY, "the proxy");
}

bool Reconciler::ApplyChain(const Desired& desired, leash::v1::ReconcileReport& report) {
  if (netfilter_ == nullptr) return true;
  absl::Status status = desired.chain ? netfilter_->Apply(*desired.chain)
                                      : netfilter_->Release(desired.account.uid);
  if (!status.ok()) {
    report.add_warnings(absl::StrCat("critical: ", desired.account.name, " (uid ",
                                     desired.account.uid, "): chain ",
                                     desired.chain ? "would not apply" : "would not release",
                                     ": ", status.message()));
    return false;
  }
  return true;
}

absl::StatusOr<PortMap> Reconciler::LoadPorts() {
  absl::StatusOr<std::string> text = base::ReadFile(options_.ports_path);
  if (absl::IsNotFound(text.status())) return PortMap();
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("port map unreadable: ", text.status().message()));
  }
  // Unchanged since the last pass (the usual case): not parsed again.
  return ports_memo_.Get(options_.ports_path, *text,
                         [&] { return PortMap::Parse(*text, options_.ports_path); });
}

struct Reconciler::Pass {
  leash::v1::ReconcileReport report;
  // Look.
  std::vector<Account> agents;
  Account user;
  std::unique_ptr<PolicySnapshot> snapshot;
  std::optional<PortMap> ports;
  std::vector<engine::IpAddress> host_resolvers;
  std::string floor_fail_mode;
  // Listeners the proxy could not bind, as of its last ack: those subjects' chains reset TCP
  // rather than redirect it, and they are denied.
  std::set<uint32_t> unbound;
  // Plan.
  std::vector<Account> wanted;
  SubordinatePlan subordinate;
  std::map<uint32_t, Desired> desired;
  // Onboard and Diff.
  std::vector<uint32_t> added, moved, changed;
  std::map<uint32_t, std::string> fingerprints;
  // What Onboard's publish already put in the sidecars, by UID (its Fingerprint): Publish does
  // not send it again when the chains left it as it was.
  std::map<uint32_t, std::string> onboarded_as;
  std::map<uint32_t, NetfilterSubject> applied_early;

  // Sets report.error; the step that calls it returns false and nothing is changed.
  bool Wholesale(const absl::Status& status) {
    report.set_error(absl::StrCat(status.message(), "; nothing was changed"));
    return false;
  }
};

// The pass as the list of its steps. It publishes to the sidecars at most twice: Onboard's
// publish only when a subject must be in the sidecars before its chain goes in, Publish's only
// when the chains leave something the sidecars do not hold yet. A new subject needs both, one on
// each side of its chain (docs/ARCHITECTURE.md, rule C6, and "Where the rules left a choice").
leash::v1::ReconcileReport Reconciler::RunPass() {
  Pass pass;
  pass.report.set_ran(true);
  // Every read and every decision comes before anything changes: a failure in these three
  // changes nothing at all (rule C2).
  if (!Look(pass)) return pass.report;       // accounts, policies, ports, resolvers, listeners
  if (!Plan(pass)) return pass.report;       // each subject's policy, port, ranges and chain
  if (!SavePorts(pass)) return pass.report;  // new ports on disk before a chain relies on them
  // Publish 1 (when needed), acked: new subjects denied, moved subjects, listeners to retry.
  Onboard(pass);
  // The proxy's answer: a listener that would not bind resets its chain and denies its subject.
  SettleListeners(pass);
  // Who changed; an unchanged subject is not touched (rule C1).
  Diff(pass);
  // The onboarded subjects' chains, then the changed ones'; a chain that fails denies its own.
  ApplyChains(pass);
  // Publish 2 (when needed), acked: what the chains left that the sidecars do not hold yet.
  Publish(pass);
  // Who is denied, which entries can never match, which sidecar lags.
  Report(pass);
  // What is in force now, and the changes said.
  Record(pass);
  return pass.report;
}

bool Reconciler::Look(Pass& pass) {
  leash::v1::ReconcileReport& report = pass.report;
  // Checked at start (the first pass) and on every pass after: a setting changed since shows.
  if (options_.filesystem_enforced) {
    for (leash::v1::ExecRoute& route : host::ReadExecRoutes(options_.exec_routes_root)) {
      *report.add_exec_routes() = std::move(route);
    }
  }
  absl::StatusOr<std::vector<Account>> agents = accounts_->ListAgentAccounts();
  if (!agents.ok()) return pass.Wholesale(agents.status());
  pass.agents = *std::move(agents);
  absl::StatusOr<std::optional<Account>> user = accounts_->Lookup(options_.configured_user);
  if (!user.ok()) return pass.Wholesale(user.status());
  if (!user->has_value()) {
    return pass.Wholesale(absl::NotFoundError(absl::StrCat(
        "the configured user '", options_.configured_user,
        "' does not exist (create it, or run `leash init --user <name>`)")));
  }
  pass.user = **user;
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> snapshot = policies_->Load();
  if (!snapshot.ok()) return pass.Wholesale(snapshot.status());
  pass.snapshot = *std::move(snapshot);
  for (std::string& note : pass.snapshot->Notes()) report.add_warnings(std::move(note));
  if (options_.retake_ports) {
    for (std::string& line : options_.retake_ports()) report.add_warnings(std::move(line));
  }
  if (!options_.single_subject) {
    absl::StatusOr<PortMap> loaded = LoadPorts();
    if (!loaded.ok()) return pass.Wholesale(loaded.status());
    pass.ports = *std::move(loaded);
  }
  absl::StatusOr<std::vector<engine::IpAddress>> host_resolvers =
      HostResolvers(options_.resolv_conf_path);
  if (host_resolvers.ok()) {
    pass.host_resolvers = *std::move(host_resolvers);
  } else {
    report.add_warnings(absl::StrCat("could not read the host's resolvers (",
                                     host_resolvers.status().message(),
                                     "): DNS is closed for subjects without dns_resolvers"));
  }
  const leash::v1::Config& floor = pass.snapshot->floor();
  pass.floor_fail_mode = floor.has_fail_mode() ? floor.fail_mode() : "closed";
  pass.unbound = UnboundListeners();
  return true;
}

bool Reconciler::Plan(Pass& pass) {
  PlanWanted(pass);
  if (!PlanSubordinateIds(pass)) return false;
  for (const Account& account : pass.wanted) {
    pass.desired[account.uid] = PlanSubject(pass, account);
  }
  PlanDeparted(pass);
  return true;
}

void Reconciler::PlanWanted(Pass& pass) {
  pass.wanted = {pass.user};
  if (!options_.single_subject || pass.agents.empty()) {
    for (const Account& a : pass.agents) {
      if (a.name != options_.configured_user) pass.wanted.push_back(a);
    }
    return;
  }
  std::vector<std::string> names;
  for (const Account& a : pass.agents) names.push_back(a.name);
  // On every pass, so that a write aimed at one of them never reads as in force.
  pass.report.add_not_in_force(absl::StrCat(
      "agent account(s) ", absl::StrJoin(names, ", "),
      " are not enforced: this service started with none (the single-subject path); restart "
      "it once (systemctl restart leash.service)"));
  if (!warned_first_agent_) {
    pass.report.add_warnings(absl::StrCat(
        "agent account(s) ", absl::StrJoin(names, ", "),
        " appeared, but this service started with none and runs the single-subject path, "
        "which cannot grow its first agent in place. Restart it once (systemctl restart "
        "leash.service): harmless now, since no agent has enforcement to lose yet"));
    warned_first_agent_ = true;
  }
}

// Whose host UIDs are whose: every subject's subordinate ranges, made disjoint, with every
// overlap said. Subjects that left discovery keep the ranges their kept chain holds.
bool Reconciler::PlanSubordinateIds(Pass& pass) {
  const std::vector<Account>& wanted = pass.wanted;
  std::map<uint32_t, std::vector<engine::UidRange>> kept_ranges;
  std::vector<engine::UidRange> all_ranges, all_gid_ranges;
  for (const Account& account : wanted) {
    all_ranges.insert(all_ranges.end(), account.subordinate_uids.begin(),
                      account.subordinate_uids.end());
    all_gid_ranges.insert(all_gid_ranges.end(), account.subordinate_gids.begin(),
                          account.subordinate_gids.end());
  }
  for (const auto& [uid, state] : subjects_) {
    const bool wanted_now = std::any_of(wanted.begin(), wanted.end(),
                                        [uid = uid](const Account& a) { return a.uid == uid; });
    if (!wanted_now && !state.subordinate_uids.empty()) kept_ranges[uid] = state.subordinate_uids;
  }
  std::vector<Account> in_ranges;
  if (!all_ranges.empty()) {
    absl::StatusOr<std::vector<Account>> found = accounts_->AccountsWithUidIn(all_ranges);
    if (!found.ok()) return pass.Wholesale(found.status());
    in_ranges = *std::move(found);
  }
  pass.subordinate = PlanSubordinateUids(wanted, kept_ranges, in_ranges);
  if (!all_gid_ranges.empty()) {
    absl::StatusOr<std::vector<Group>> groups = accounts_->GroupsWithGidIn(all_gid_ranges);
    if (!groups.ok()) return pass.Wholesale(groups.status());
    for (auto& [uid, why] : SubordinateGidConflicts(wanted, *groups)) {
      std::vector<std::string>& into = pass.subordinate.conflicts[uid];
      into.insert(into.end(), why.begin(), why.end());
    }
  }
  return true;
}

Reconciler::Desired Reconciler::PlanSubject(Pass& pass, const Account& account) {
  Desired d;
  d.account = account;
  d.configured_user = account.name == options_.configured_user;
  if (auto it = pass.subordinate.ranges.find(account.uid); it != pass.subordinate.ranges.end()) {
    d.subordinate_uids = it->second;
  }
  d.uids_in_chain = d.subordinate_uids;
  d.subordinate_gids = account.subordinate_gids;
  // Subordinate IDs that cannot be known, or that overlap someone else's: denied, said.
  std::vector<std::string> id_problems = account.subordinate_problems;
  if (auto it = pass.subordinate.conflicts.find(account.uid);
      it != pass.subordinate.conflicts.end()) {
    id_problems.insert(id_problems.end(), it->second.begin(), it->second.end());
  }
  PlanPort(pass, d);
  leash::v1::SubjectPolicy policy = PlanPolicy(pass, d, id_problems);
  std::vector<engine::IpAddress> resolvers;
  if (d.problem.empty()) resolvers = PlanResolvers(pass.host_resolvers, policy);
  d.chain = PlanChain(pass, d, policy, resolvers);
  d.policy = std::move(policy);
  return d;
}

// The subject's proxy port: kept for the account's life, moved (and said) only when another
// process holds it. None is a problem of the host: the subject is denied.
void Reconciler::PlanPort(Pass& pass, Desired& d) {
  if (options_.single_subject) {
    d.port = kSingleSubjectPort;
    return;
  }
  const Account& account = d.account;
  const std::optional<uint16_t> before = pass.ports->PortOf(account.name);
  absl::StatusOr<uint16_t> port = pass.ports->Assign(account, options_.port_usable);
  if (!port.ok()) {
    // No port: its chain is the refuse-all one (PlanChain), and every pass tries again.
    const std::string holders = options_.port_holders ? options_.port_holders() : "";
    d.problem = absl::StrCat(
        "refused: no proxy port for it, so every connection it makes (TCP, UDP, DNS) is refused "
        "by its chain until one frees up (", port.status().message(), ")",
        holders.empty() ? "" : absl::StrCat("; ", holders));
    d.runtime_problem = true;
    return;
  }
  if (before && *before != *port) {
    pass.report.add_warnings(absl::StrCat(
        "critical: ", account.name, " moved from proxy port ", *before, " to ", *port,
        ": another process holds ", *before, " (bound while leashd was not running)"));
  }
  d.port = *port;
}

// Where the subject's DNS goes: its policy's resolvers, or the host's. Written into what the
// proxy is sent (its DNS filter forwards there) and returned for the chain's DNS redirect.
std::vector<engine::IpAddress> Reconciler::PlanResolvers(
    const std::vector<engine::IpAddress>& host_resolvers, leash::v1::SubjectPolicy& policy) {
  std::vector<engine::IpAddress> resolvers;
  const leash::v1::NetworkPolicy& network = policy.policy().network();
  if (network.dns_resolvers().entries().empty()) {
    resolvers = host_resolvers;
  } else {
    for (const std::string& entry : network.dns_resolvers().entries()) {
      absl::StatusOr<engine::IpAddress> address = engine::ParseResolverEntry(entry);
      if (address.ok()) resolvers.push_back(*address);
    }
  }
  for (const engine::IpAddress& resolver : resolvers) {
    policy.add_dns_resolvers(engine::FormatIpAddress(resolver));
  }
  return resolvers;
}

// The subject's chain, or none when the network enforcer is off (for the host or for it).
std::optional<NetfilterSubject> Reconciler::PlanChain(
    const Pass& pass, const Desired& d, const leash::v1::SubjectPolicy& policy,
    const std::vector<engine::IpAddress>& resolvers) const {
  // A subject with no policy keeps its chain (and its listener refuses): without one its
  // processes would reach the network unfiltered.
  const bool network_on = !d.problem.empty() || policy.policy().enforcers().network();
  if (!options_.network_enforced || !network_on) return std::nullopt;
  NetfilterSubject chain;
  chain.uid = d.account.uid;
  chain.subordinate_uids = d.subordinate_uids;
  // No port (none could be held for it): the refuse-all chain. Never no chain: without one its
  // processes would reach the network unfiltered.
  chain.port = d.port;
  chain.refuse_tcp = d.port == 0 || pass.unbound.count(d.account.uid) > 0;
  if (d.problem.empty()) {
    const leash::v1::NetworkPolicy& network = policy.policy().network();
    chain.udp_allowed = network.udp() == leash::v1::UDP_MODE_ALLOW;
    chain.inbound_allowed = network.inbound() == leash::v1::INBOUND_MODE_ALLOW;
    chain.dns_filter = network.dns() != leash::v1::DNS_MODE_RESOLVERS;
    chain.dns_resolvers = resolvers;
  }
  return chain;
}

// The subject's policy as resolved, or its denial (setting d.problem) when it has none.
leash::v1::SubjectPolicy Reconciler::PlanPolicy(Pass& pass, Desired& d,
                                                const std::vector<std::string>& id_problems) {
  if (d.problem.empty() && !id_problems.empty()) d.problem = absl::StrJoin(id_problems, "; ");
  absl::StatusOr<leash::v1::Config> policy = absl::FailedPreconditionError(d.problem);
  std::optional<leash::v1::Config> audit_above;
  if (d.problem.empty()) {
    PolicySnapshot::Resolution resolution = pass.snapshot->Resolve(d.account, d.configured_user);
    policy = std::move(resolution.policy);
    audit_above = std::move(resolution.audit_above);
    d.sources = std::move(resolution.sources);
    if (!policy.ok()) d.problem = std::string(policy.status().message());
  }
  if (!d.problem.empty()) return NoPolicy(d, d.problem, pass.floor_fail_mode);
  leash::v1::SubjectPolicy out;
  out.set_uid(d.account.uid);
  out.set_account(d.account.name);
  out.set_port(d.port);
  *out.mutable_policy() = *policy;
  if (audit_above) *out.mutable_audit_above() = *std::move(audit_above);
  SetSubordinateIds(d, out);
  // Re-resolved every pass: a link retargeted by an upgrade is picked up by the next one.
  for (engine::CommandLink& link : host::ResolveCommandLinks(*policy, options_.command_search_path)) {
    leash::v1::CommandLink* wire = out.add_command_links();
    wire->set_name(std::move(link.name));
    wire->set_target(std::move(link.target));
  }
  return out;
}

// Subjects that left discovery lose their policy and keep their mechanism.
void Reconciler::PlanDeparted(Pass& pass) {
  for (const auto& [uid, state] : subjects_) {
    if (pass.desired.count(uid)) continue;
    Desired d;
    d.account = state.account;
    d.port = state.port;
    d.in_discovery = false;
    d.chain = state.chain;
    d.subordinate_uids = state.subordinate_uids;
    d.subordinate_gids = state.subordinate_gids;
    d.problem = "left discovery";
    d.policy = NoPolicy(d, "left discovery: no policy, every connection refused and every "
                           "filesystem and exec event denied",
                        pass.floor_fail_mode);
    pass.desired[uid] = std::move(d);
  }
}

// New port assignments are on disk before any chain or listener depends on them.
bool Reconciler::SavePorts(Pass& pass) {
  if (!pass.ports || !pass.ports->dirty()) return true;
  const std::string dir = DirName(options_.ports_path);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return pass.Wholesale(absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir)));
  }
  absl::Status saved = pass.ports->Save(options_.ports_path);
  if (!saved.ok()) return pass.Wholesale(saved);
  return true;
}

// New subjects are denied in the sidecars before their chains go in (the watcher must know
// them: an absent UID is an allowed UID; the proxy must listen where the chain redirects).
// Subjects whose subordinate ranges or port move go with them, before any of them, so that
// neither the sidecars' maps nor the kernel's interval map ever hold one UID for two subjects:
// nftables would refuse the second claim (leaving a new subject unconfined), and the watcher
// could only guess whose the UID is. Subjects whose listener would not bind are sent again:
// every map the proxy gets retries its listeners, and its ack says which bind now.
void Reconciler::Onboard(Pass& pass) {
  std::vector<leash::v1::SubjectPolicy> onboarding;
  for (const auto& [uid, d] : pass.desired) {
    auto it = subjects_.find(uid);
    if (it == subjects_.end()) {
      pass.added.push_back(uid);
      leash::v1::SubjectPolicy denied = NoPolicy(d, "being onboarded", pass.floor_fail_mode);
      denied.mutable_no_policy()->set_onboarding(true);
      onboarding.push_back(std::move(denied));
    } else if (it->second.subordinate_uids != d.subordinate_uids || it->second.port != d.port) {
      pass.moved.push_back(uid);
      // Its chain does not hold the new ranges yet: the sidecars learn whose they are, the
      // watcher keeps holding /etc/subuid for them until Publish says they are in the chain.
      leash::v1::SubjectPolicy before_chain = d.policy;
      before_chain.clear_subordinate_uids_in_chain();
      AppendIdRanges(UidsInChain(it->second, d.subordinate_uids), before_chain.mutable_subordinate_uids_in_chain());
      onboarding.push_back(std::move(before_chain));
    } else if (pass.unbound.count(uid) > 0) {
      onboarding.push_back(it->second.published);
    }
  }
  if (onboarding.empty()) return;
  for (const leash::v1::SubjectPolicy& sent : onboarding) {
    pass.onboarded_as[sent.uid()] = Fingerprint(sent);
  }
  PublishAndWait(onboarding, pass.report);
  pass.unbound = UnboundListeners();
}

// A listener that would not bind denies its subject alone, and its chain resets its TCP
// instead of redirecting it to a port someone else holds (refuse_tcp). What the proxy said
// last decides, for every subject; a new subject's chain goes in knowing it.
void Reconciler::SettleListeners(Pass& pass) {
  if (!options_.network_enforced) return;
  for (auto& [uid, d] : pass.desired) {
    if (!d.in_discovery) continue;  // it keeps its chain exactly as it was
    const bool refuse = pass.unbound.count(uid) > 0;
    if (d.chain) d.chain->refuse_tcp = refuse || d.chain->port == 0;
    if (refuse && d.policy.has_policy()) {
      DenyAtRuntime(d, absl::StrCat("its proxy listener would not bind (port ", d.port,
                                    "; leashd's log says why, e.g. another process holds it)"),
                    pass);
    }
  }
}

void Reconciler::Diff(Pass& pass) {
  uint32_t unchanged = 0;
  const std::set<uint32_t> added(pass.added.begin(), pass.added.end());
  for (const auto& [uid, d] : pass.desired) {
    const std::string& print = pass.fingerprints[uid] = Fingerprint(d.policy);
    if (added.count(uid)) continue;
    const SubjectState& state = subjects_.at(uid);
    if (state.fingerprint != print || state.chain != d.chain) {
      pass.changed.push_back(uid);
    } else {
      ++unchanged;
    }
  }
  pass.report.set_unchanged(unchanged);
}

void Reconciler::ApplyChains(Pass& pass) {
  if (!pass.added.empty() || !pass.moved.empty()) ApplyOnboardingChains(pass);
  ApplyChangedChains(pass);
}

void Reconciler::ApplyOnboardingChains(Pass& pass) {
  std::vector<NetfilterSubject> chains;
  // Moved subjects first: applied one at a time, they release their old ranges before a new
  // subject claims them.
  for (const std::vector<uint32_t>* uids : {&pass.moved, &pass.added}) {
    for (uint32_t uid : *uids) {
      if (pass.desired[uid].chain) chains.push_back(*pass.desired[uid].chain);
    }
  }
  // Many at once (startup, or ranges moving between subjects) go in one batch; if the batch
  // fails, each subject is applied on its own so one bad subject cannot hold back the others.
  bool batched = false;
  if (netfilter_ != nullptr && chains.size() > 1) batched = netfilter_->ApplyAll(chains).ok();
  for (uint32_t uid : pass.moved) {
    const Desired& d = pass.desired[uid];
    if (!d.chain) continue;
    // A moved subject whose own apply fails here is tried again, and reported, with the
    // other changed subjects.
    if (batched || (netfilter_ != nullptr && netfilter_->Apply(*d.chain).ok())) {
      pass.applied_early[uid] = *d.chain;
    }
  }
  for (uint32_t uid : pass.added) {
    Desired& d = pass.desired[uid];
    if (!d.chain || batched) continue;
    if (!ApplyChain(d, pass.report)) {
      d.network_unconfined = true;
      d.chain.reset();
      DenyAtRuntime(d, "its nftables chain would not apply", pass);
    }
  }
}

void Reconciler::ApplyChangedChains(Pass& pass) {
  for (uint32_t uid : pass.changed) {
    Desired& d = pass.desired[uid];
    const SubjectState& state = subjects_[uid];
    // A subject that left discovery keeps its chain exactly as it was.
    if (!d.in_discovery && state.chain == d.chain) continue;
    // Applied with the new subjects, and not changed since.
    if (auto early = pass.applied_early.find(uid);
        early != pass.applied_early.end() && d.chain && early->second == *d.chain) {
      continue;
    }
    if (ApplyChain(d, pass.report) || !d.chain) continue;
    d.uids_in_chain = UidsInChain(state, state.subordinate_uids);
    if (state.chain.has_value()) {
      DenyAtRuntime(d, "its nftables chain would not re-apply", pass);  // the old one stays
    } else {
      // A subject whose chain never went in (a retry): still no chain, still unconfined.
      d.network_unconfined = true;
      d.chain.reset();
      DenyAtRuntime(d, "its nftables chain would not apply", pass);
    }
  }
}

// The publish of policies: every new and changed subject as the chains and listeners left it,
// except what Onboard's publish already put in the sidecars unchanged (a moved subject whose
// chain went in), so a pass that only moves a subject publishes once. A new subject is always
// sent here: Onboard sent its denial, and this is its policy.
void Reconciler::Publish(Pass& pass) {
  std::vector<leash::v1::SubjectPolicy> publish;
  for (const std::vector<uint32_t>* uids : {&pass.added, &pass.changed}) {
    for (uint32_t uid : *uids) {
      const leash::v1::SubjectPolicy& policy = pass.desired[uid].policy;
      auto onboarded = pass.onboarded_as.find(uid);
      if (onboarded != pass.onboarded_as.end() && onboarded->second == Fingerprint(policy)) {
        continue;
      }
      publish.push_back(policy);
    }
  }
  PublishAndWait(publish, pass.report);
}

// Said on every pass: who is denied, which entries can never match, which sidecar lags.
void Reconciler::Report(Pass& pass) {
  for (const auto& [uid, d] : pass.desired) ReportSubject(d, pass.report);
  CheckSidecarsInForce(pass.report);
}

void Reconciler::ReportSubject(const Desired& d, leash::v1::ReconcileReport& report) const {
  const std::string who = absl::StrCat(d.account.name, " (uid ", d.account.uid, ")");
  if (!d.problem.empty() && d.in_discovery && d.network_unconfined) {
    const std::string what = absl::StrCat(
        who, " is denied its files and commands, but its network traffic is NOT confined: ",
        d.problem);
    report.add_warnings(absl::StrCat("critical: ", what));
    AddNotInForce(report, what);
  } else if (!d.problem.empty() && d.in_discovery) {
    report.add_warnings(
        absl::StrCat("critical: ", who, " has no policy and is denied everything: ", d.problem));
    if (d.runtime_problem) {
      AddNotInForce(report, absl::StrCat(who, " is denied everything: ", d.problem));
    }
  }
  if (!d.policy.has_policy()) return;
  if (const std::string warning = ToolsTransportWarning(d.account.name, d.policy.policy(),
                                                      options_.tools_max_request_bytes);
      !warning.empty()) {
    report.add_warnings(warning);
  }
  for (const leash::v1::InertEntry& inert : engine::InertEntries(d.policy.policy())) {
    report.add_warnings(absl::StrCat(engine::IsInertDeny(inert) ? "critical: " : "warning: ",
                                     d.account.name, ": ", inert.field(), " entry '",
                                     inert.entry(), "' can never match: ", inert.reason()));
  }
}

// Records what is in force, and says what changed.
void Reconciler::Record(Pass& pass) {
  const std::set<uint32_t> added(pass.added.begin(), pass.added.end());
  const std::set<uint32_t> changed(pass.changed.begin(), pass.changed.end());
  for (auto& [uid, d] : pass.desired) {
    SubjectState& state = subjects_[uid];
    const bool is_new = added.count(uid) > 0;
    const bool is_changed = changed.count(uid) > 0;
    state.account = d.account;
    state.configured_user = d.configured_user;
    state.port = d.port;
    state.in_discovery = d.in_discovery;
    // A new or changed subject's policy may have been replaced since the diff (a chain that
    // failed), so its fingerprint is taken again; the rest are as diffed.
    state.fingerprint = is_new || is_changed ? Fingerprint(d.policy) : pass.fingerprints[uid];
    state.published = d.policy;
    state.chain = d.chain;
    state.sources = d.sources;
    state.problem = d.problem;
    state.subordinate_uids = d.subordinate_uids;
    state.subordinate_gids = d.subordinate_gids;
    if (!is_new && !is_changed) continue;
    if (!d.in_discovery) {
      AddChange(pass.report, d.account, "left-discovery",
                "policy dropped; chain kept; every connection refused and fs/exec event denied");
    } else if (!d.problem.empty()) {
      AddChange(pass.report, d.account, "denied",
                absl::StrCat("critical: denied everything: ", d.problem));
    } else {
      AddChange(pass.report, d.account, is_new ? "added" : "reapplied",
                absl::StrCat("port ", d.port, d.sources.empty() ? "" : "; from ",
                             absl::StrJoin(d.sources, ", ")));
    }
  }
}

void Reconciler::DenyAtRuntime(Desired& d, const std::string& problem, const Pass& pass) const {
  d.problem = problem;
  d.runtime_problem = true;
  d.policy = NoPolicy(d, d.problem, pass.floor_fail_mode);
}

}  // namespace leash::controlplane
