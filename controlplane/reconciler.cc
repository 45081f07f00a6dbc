#include "controlplane/reconciler.h"

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
                       PolicyStreamService* stream)
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
  const SidecarState proxy = stream_->State(leash::v1::SIDECAR_KIND_PROXY);
  return std::set<uint32_t>(proxy.failed_uids.begin(), proxy.failed_uids.end());
}

void Reconciler::CheckSidecarsInForce(leash::v1::ReconcileReport& report) {
  const uint64_t latest = stream_->version();
  if (latest == 0) return;
  auto check = [&](bool enforced, leash::v1::SidecarKind kind, const char* name) {
    if (!enforced) return;
    const SidecarState state = stream_->State(kind);
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
  absl::StatusOr<std::string> text = ReadFile(options_.ports_path);
  if (absl::IsNotFound(text.status())) return PortMap();
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("port map unreadable: ", text.status().message()));
  }
  // Unchanged since the last pass (the usual case): not parsed again.
  return ports_memo_.Get(options_.ports_path, *text,
                         [&] { return PortMap::Parse(*text, options_.ports_path); });
}

leash::v1::ReconcileReport Reconciler::RunPass() {
  leash::v1::ReconcileReport report;
  report.set_ran(true);
  // Checked at start (the first pass) and on every pass after: a setting changed since shows.
  if (options_.filesystem_enforced) {
    for (leash::v1::ExecRoute& route : ReadExecRoutes(options_.exec_routes_root)) {
      *report.add_exec_routes() = std::move(route);
    }
  }
  auto wholesale = [&](const absl::Status& status) {
    report.set_error(absl::StrCat(status.message(), "; nothing was changed"));
    return report;
  };

  // --- Look. Every read happens before anything changes. ---
  absl::StatusOr<std::vector<Account>> agents = accounts_->ListAgentAccounts();
  if (!agents.ok()) return wholesale(agents.status());
  absl::StatusOr<std::optional<Account>> user = accounts_->Lookup(options_.configured_user);
  if (!user.ok()) return wholesale(user.status());
  if (!user->has_value()) {
    return wholesale(absl::NotFoundError(absl::StrCat(
        "the configured user '", options_.configured_user,
        "' does not exist (create it, or run `leash init --user <name>`)")));
  }
  absl::StatusOr<std::unique_ptr<PolicySnapshot>> snapshot = policies_->Load();
  if (!snapshot.ok()) return wholesale(snapshot.status());
  for (std::string& note : (*snapshot)->Notes()) report.add_warnings(std::move(note));
  std::optional<PortMap> ports;
  if (!options_.single_subject) {
    absl::StatusOr<PortMap> loaded = LoadPorts();
    if (!loaded.ok()) return wholesale(loaded.status());
    ports = *std::move(loaded);
  }
  absl::StatusOr<std::vector<engine::IpAddress>> host_resolvers =
      HostResolvers(options_.resolv_conf_path);
  if (!host_resolvers.ok()) {
    report.add_warnings(absl::StrCat("could not read the host's resolvers (",
                                     host_resolvers.status().message(),
                                     "): DNS is closed for subjects without dns_resolvers"));
    host_resolvers = std::vector<engine::IpAddress>();
  }
  const leash::v1::Config& floor = (*snapshot)->floor();
  const std::string floor_fail_mode = floor.has_fail_mode() ? floor.fail_mode() : "closed";
  // Listeners the proxy could not bind as of its last ack (a respawned proxy whose port someone
  // took): those subjects' chains reset TCP rather than redirect it.
  const std::set<uint32_t> unbound = UnboundListeners();

  // --- Plan: who should be in force, and how. ---
  std::vector<Account> wanted = {**user};
  if (options_.single_subject && !agents->empty()) {
    std::vector<std::string> names;
    for (const Account& a : *agents) names.push_back(a.name);
    // On every pass, so that a write aimed at one of them never reads as in force.
    report.add_not_in_force(absl::StrCat(
        "agent account(s) ", absl::StrJoin(names, ", "),
        " are not enforced: this service started with none (the single-subject path); restart "
        "it once (systemctl restart leash.service)"));
    if (!warned_first_agent_) {
      report.add_warnings(absl::StrCat(
          "agent account(s) ", absl::StrJoin(names, ", "),
          " appeared, but this service started with none and runs the single-subject path, "
          "which cannot grow its first agent in place. Restart it once (systemctl restart "
          "leash.service): harmless now, since no agent has enforcement to lose yet"));
      warned_first_agent_ = true;
    }
  } else {
    for (const Account& a : *agents) {
      if (a.name != options_.configured_user) wanted.push_back(a);
    }
  }

  // Whose host UIDs are whose: every subject's subordinate ranges, made disjoint, with every
  // overlap said. Subjects that left discovery keep the ranges their kept chain holds.
  std::map<uint32_t, std::vector<engine::UidRange>> kept_ranges;
  std::vector<engine::UidRange> all_ranges;
  for (const Account& account : wanted) {
    all_ranges.insert(all_ranges.end(), account.subordinate_uids.begin(),
                      account.subordinate_uids.end());
  }
  for (const auto& [uid, state] : subjects_) {
    const bool wanted_now = std::any_of(wanted.begin(), wanted.end(),
                                        [uid = uid](const Account& a) { return a.uid == uid; });
    if (!wanted_now && !state.subordinate_uids.empty()) kept_ranges[uid] = state.subordinate_uids;
  }
  std::vector<Account> in_ranges;
  if (!all_ranges.empty()) {
    absl::StatusOr<std::vector<Account>> found = accounts_->AccountsWithUidIn(all_ranges);
    if (!found.ok()) return wholesale(found.status());
    in_ranges = *std::move(found);
  }
  SubordinatePlan subordinate = PlanSubordinateUids(wanted, kept_ranges, in_ranges);
  std::vector<engine::UidRange> all_gid_ranges;
  for (const Account& account : wanted) {
    all_gid_ranges.insert(all_gid_ranges.end(), account.subordinate_gids.begin(),
                          account.subordinate_gids.end());
  }
  if (!all_gid_ranges.empty()) {
    absl::StatusOr<std::vector<Group>> groups = accounts_->GroupsWithGidIn(all_gid_ranges);
    if (!groups.ok()) return wholesale(groups.status());
    for (auto& [uid, why] : SubordinateGidConflicts(wanted, *groups)) {
      std::vector<std::string>& into = subordinate.conflicts[uid];
      into.insert(into.end(), why.begin(), why.end());
    }
  }

  std::map<uint32_t, Desired> desired;
  for (const Account& account : wanted) {
    Desired d;
    d.account = account;
    d.configured_user = account.name == options_.configured_user;
    if (auto it = subordinate.ranges.find(account.uid); it != subordinate.ranges.end()) {
      d.subordinate_uids = it->second;
    }
    d.subordinate_gids = account.subordinate_gids;
    // Subordinate IDs that cannot be known, or that overlap someone else's: denied, said.
    std::vector<std::string> id_problems = account.subordinate_problems;
    if (auto it = subordinate.conflicts.find(account.uid); it != subordinate.conflicts.end()) {
      id_problems.insert(id_problems.end(), it->second.begin(), it->second.end());
    }
    if (options_.single_subject) {
      d.port = kSingleSubjectPort;
    } else {
      const std::optional<uint16_t> before = ports->PortOf(account.name);
      absl::StatusOr<uint16_t> port = ports->Assign(account, options_.port_usable);
      if (port.ok() && before && *before != *port) {
        report.add_warnings(absl::StrCat(
            "critical: ", account.name, " moved from proxy port ", *before, " to ", *port,
            ": another process holds ", *before, " (bound while leashd was not running)"));
      }
      if (port.ok()) {
        d.port = *port;
      } else {
        d.problem = std::string(port.status().message());
        d.runtime_problem = true;
      }
    }
    absl::StatusOr<leash::v1::Config> policy =
        absl::FailedPreconditionError("no port for the subject");
    if (d.problem.empty() && !id_problems.empty()) {
      d.problem = absl::StrJoin(id_problems, "; ");
      policy = absl::FailedPreconditionError(d.problem);
    }
    if (d.problem.empty()) {
      PolicySnapshot::Resolution resolution = (*snapshot)->Resolve(account, d.configured_user);
      policy = std::move(resolution.policy);
      d.sources = std::move(resolution.sources);
      if (!policy.ok()) d.problem = std::string(policy.status().message());
    }
    if (d.problem.empty()) {
      d.policy.set_uid(account.uid);
      d.policy.set_account(account.name);
      d.policy.set_port(d.port);
      *d.policy.mutable_policy() = *policy;
      SetSubordinateIds(d, d.policy);
      // Re-resolved every pass: a link retargeted by an upgrade is picked up by the next one.
      for (engine::CommandLink& link :
           ResolveCommandLinks(*policy, options_.command_search_path)) {
        leash::v1::CommandLink* wire = d.policy.add_command_links();
        wire->set_name(std::move(link.name));
        wire->set_target(std::move(link.target));
      }
    } else {
      d.policy = NoPolicy(d, d.problem, floor_fail_mode);
    }
    // A subject with no policy keeps its chain (and its listener refuses): without one its
    // processes would reach the network unfiltered.
    const bool network_on = !d.problem.empty() || policy->enforcers().network();
    if (options_.network_enforced && d.port != 0 && network_on) {
      NetfilterSubject chain;
      chain.uid = account.uid;
      chain.subordinate_uids = d.subordinate_uids;
      chain.port = d.port;
      chain.refuse_tcp = unbound.count(account.uid) > 0;
      if (d.problem.empty()) {
        chain.udp_allowed = policy->network().udp() == leash::v1::UDP_MODE_ALLOW;
        chain.inbound_allowed = policy->network().inbound() == leash::v1::INBOUND_MODE_ALLOW;
        if (policy->network().dns_resolvers().entries().empty()) {
          chain.dns_resolvers = *host_resolvers;
        } else {
          for (const std::string& entry : policy->network().dns_resolvers().entries()) {
            absl::StatusOr<engine::IpAddress> address = engine::ParseResolverEntry(entry);
            if (address.ok()) chain.dns_resolvers.push_back(*address);
          }
        }
      }
      d.chain = chain;
    }
    desired[account.uid] = std::move(d);
  }
  // Subjects that left discovery lose their policy and keep their mechanism.
  for (const auto& [uid, state] : subjects_) {
    if (desired.count(uid)) continue;
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
                        floor_fail_mode);
    desired[uid] = std::move(d);
  }

  // New port assignments are on disk before any chain or listener depends on them.
  if (ports && ports->dirty()) {
    const std::string dir = DirName(options_.ports_path);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return wholesale(absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir)));
    }
    absl::Status saved = ports->Save(options_.ports_path);
    if (!saved.ok()) return wholesale(saved);
  }

  // --- Diff. ---
  std::vector<uint32_t> added, changed;
  uint32_t unchanged = 0;
  std::map<uint32_t, std::string> fingerprints;
  for (const auto& [uid, d] : desired) {
    const std::string& print = fingerprints[uid] = Fingerprint(d.policy);
    auto it = subjects_.find(uid);
    if (it == subjects_.end()) {
      added.push_back(uid);
    } else if (it->second.fingerprint != print || it->second.chain != d.chain) {
      changed.push_back(uid);
    } else {
      ++unchanged;
    }
  }
  report.set_unchanged(unchanged);

  // Changed subjects whose subordinate ranges changed: a range may be moving to another subject
  // (a new one, or one changed in this pass). They go with the new subjects, before any of
  // them, so that neither the sidecars' maps nor the kernel's interval map ever hold one UID for
  // two subjects: nftables would refuse the second claim (leaving a new subject unconfined),
  // and the watcher could only guess whose the UID is.
  std::vector<uint32_t> moved;
  for (uint32_t uid : changed) {
    if (subjects_[uid].subordinate_uids != desired[uid].subordinate_uids) moved.push_back(uid);
  }
  std::map<uint32_t, NetfilterSubject> applied_early;

  // --- New subjects: denied in the sidecars first, then their chains. ---
  if (!added.empty() || !moved.empty()) {
    std::vector<leash::v1::SubjectPolicy> denied;
    for (uint32_t uid : added) {
      denied.push_back(NoPolicy(desired[uid], "being onboarded", floor_fail_mode));
    }
    for (uint32_t uid : moved) denied.push_back(desired[uid].policy);
    PublishAndWait(denied, report);
    std::vector<NetfilterSubject> chains;
    // Moved subjects first: applied one at a time, they release their old ranges before a new
    // subject claims them.
    for (const std::vector<uint32_t>* uids : {&moved, &added}) {
      for (uint32_t uid : *uids) {
        if (desired[uid].chain) chains.push_back(*desired[uid].chain);
      }
    }
    // Many at once (startup, or ranges moving between subjects) go in one batch; if the batch
    // fails, each subject is applied on its own so one bad subject cannot hold back the others.
    bool batched = false;
    if (netfilter_ != nullptr && chains.size() > 1) batched = netfilter_->ApplyAll(chains).ok();
    for (uint32_t uid : moved) {
      Desired& d = desired[uid];
      if (!d.chain) continue;
      // A moved subject whose own apply fails here is tried again, and reported, with the
      // other changed subjects below.
      if (batched || (netfilter_ != nullptr && netfilter_->Apply(*d.chain).ok())) {
        applied_early[uid] = *d.chain;
      }
    }
    for (uint32_t uid : added) {
      Desired& d = desired[uid];
      if (!d.chain || batched) continue;
      if (!ApplyChain(d, report)) {
        d.problem = "its nftables chain would not apply";
        d.runtime_problem = true;
        d.network_unconfined = true;
        d.chain.reset();
        d.policy = NoPolicy(d, d.problem, floor_fail_mode);
      }
    }
  }

  // --- Policies for new and changed subjects; then the changed subjects' chains. ---
  std::vector<leash::v1::SubjectPolicy> publish;
  for (uint32_t uid : added) publish.push_back(desired[uid].policy);
  for (uint32_t uid : changed) publish.push_back(desired[uid].policy);
  PublishAndWait(publish, report);
  if (options_.network_enforced && !publish.empty()) {
    // A listener that would not bind denies its subject alone, and its chain resets its TCP
    // instead of redirecting it to a port someone else holds (refuse_tcp). What the proxy
    // says now decides, for every subject this pass touched.
    const std::set<uint32_t> unbound_after = UnboundListeners();
    std::vector<leash::v1::SubjectPolicy> denied_now;
    for (const std::vector<uint32_t>* uids : {&added, &changed}) {
      for (uint32_t uid : *uids) {
        Desired& d = desired[uid];
        const bool refuse = unbound_after.count(uid) > 0;
        if (d.chain && d.chain->refuse_tcp != refuse) {
          d.chain->refuse_tcp = refuse;
          // A new subject's chain went in before its policy: put the right one in now.
          if (uids == &added && !ApplyChain(d, report)) d.chain.reset();
        }
        if (!refuse || !d.policy.has_policy()) continue;
        d.problem = absl::StrCat("its proxy listener would not bind (port ", d.port,
                                 "; leashd's log says why, e.g. another process holds it)");
        d.runtime_problem = true;
        d.policy = NoPolicy(d, d.problem, floor_fail_mode);
        denied_now.push_back(d.policy);
      }
    }
    PublishAndWait(denied_now, report);
  }
  for (uint32_t uid : changed) {
    Desired& d = desired[uid];
    // A subject that left discovery keeps its chain exactly as it was.
    if (!d.in_discovery && subjects_[uid].chain == d.chain) continue;
    // Applied above with the new subjects, and not changed since.
    if (auto early = applied_early.find(uid);
        early != applied_early.end() && d.chain && early->second == *d.chain) {
      continue;
    }
    const bool had_chain = subjects_[uid].chain.has_value();
    if (!ApplyChain(d, report) && d.chain) {
      d.runtime_problem = true;
      if (had_chain) {
        d.problem = "its nftables chain would not re-apply";  // the old one is still in place
      } else {
        // A subject whose chain never went in (a retry): still no chain, still unconfined.
        d.problem = "its nftables chain would not apply";
        d.network_unconfined = true;
        d.chain.reset();
      }
      d.policy = NoPolicy(d, d.problem, floor_fail_mode);
      PublishAndWait({d.policy}, report);
    }
  }

  // --- Say, on every pass, who is denied and which entries can never match. ---
  for (const auto& [uid, d] : desired) {
    if (!d.problem.empty() && d.in_discovery && d.network_unconfined) {
      const std::string what = absl::StrCat(
          d.account.name, " (uid ", uid, ") is denied its files and commands, but its network "
          "traffic is NOT confined: ", d.problem);
      report.add_warnings(absl::StrCat("critical: ", what));
      AddNotInForce(report, what);
    } else if (!d.problem.empty() && d.in_discovery) {
      report.add_warnings(absl::StrCat("critical: ", d.account.name, " (uid ", uid,
                                       ") has no policy and is denied everything: ", d.problem));
      if (d.runtime_problem) {
        AddNotInForce(report, absl::StrCat(d.account.name, " (uid ", uid,
                                           ") is denied everything: ", d.problem));
      }
    }
    if (!d.policy.has_policy()) continue;
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

  CheckSidecarsInForce(report);

  // --- Record what is in force, and say what changed. ---
  std::set<uint32_t> added_set(added.begin(), added.end());
  for (auto& [uid, d] : desired) {
    SubjectState& state = subjects_[uid];
    const bool is_new = added_set.count(uid) > 0;
    const bool is_changed = !is_new && std::find(changed.begin(), changed.end(), uid) != changed.end();
    state.account = d.account;
    state.configured_user = d.configured_user;
    state.port = d.port;
    state.in_discovery = d.in_discovery;
    // A new or changed subject's policy may have been replaced since the diff (a chain or a
    // listener that failed), so its fingerprint is taken again; the rest are as diffed.
    state.fingerprint = is_new || is_changed ? Fingerprint(d.policy) : fingerprints[uid];
    state.published = d.policy;
    state.chain = d.chain;
    state.sources = d.sources;
    state.problem = d.problem;
    state.subordinate_uids = d.subordinate_uids;
    state.subordinate_gids = d.subordinate_gids;
    if (!is_new && !is_changed) continue;
    if (!d.in_discovery) {
      AddChange(report, d.account, "left-discovery",
                "policy dropped; chain kept; every connection refused and fs/exec event denied");
    } else if (!d.problem.empty()) {
      AddChange(report, d.account, "denied", absl::StrCat("critical: denied everything: ", d.problem));
    } else {
      AddChange(report, d.account, is_new ? "added" : "reapplied",
                absl::StrCat("port ", d.port, d.sources.empty() ? "" : "; from ",
                             absl::StrJoin(d.sources, ", ")));
    }
  }
  return report;
}

}  // namespace leash::controlplane
