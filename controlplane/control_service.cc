#include "controlplane/control_service.h"

#include <pwd.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/host/command_links.h"
#include "controlplane/floor_file.h"
#include "engine/check_subject.h"
#include "engine/complete_judgement.h"
#include "engine/config_defaults.h"
#include "engine/config_yaml.h"
#include "engine/consent.h"
#include "engine/decision.h"
#include "engine/refusal.h"
#include "engine/removal_consent.h"
#include "engine/validate.h"
#include "proto/host/exec_routes.h"
#include "proto/host/list_files.h"

namespace leash::controlplane {
std::string DescribeUnbindCaller(const std::optional<ucred>& peer, absl::string_view claim) {
  std::string who;
  if (peer) {
    struct passwd entry;
    struct passwd* found = nullptr;
    char buffer[4096];
    const bool named =
        getpwuid_r(peer->uid, &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr;
    who = absl::StrCat("uid ", peer->uid, named ? absl::StrCat(" (", found->pw_name, ")") : "",
                       ", pid ", peer->pid);
  } else {
    who = "the caller's credentials could not be read";
  }
  if (!claim.empty()) absl::StrAppend(&who, "; claimed by the client: ", claim);
  return who;
}

namespace {

// `leash validate` on a subject that holds subordinate IDs: a warning that says what they are
// (host UIDs its processes can run under inside a user namespace it makes, confined as the
// subject) and the command that removes them if the agent does not need them.
std::vector<leash::v1::Finding> SubordinateIdFindings(const SubjectState& state) {
  std::vector<leash::v1::Finding> findings;
  // What the account holds in /etc/subuid and /etc/subgid, all of it (not leashd's share).
  const std::vector<engine::UidRange>& uids = state.account.subordinate_uids;
  const std::vector<engine::UidRange>& gids = state.account.subordinate_gids;
  // Lines naming it in another form than useradd's, or that newuidmap ignores: what they
  // were read as, so the operator sees the range the agent really holds.
  for (const std::string& note : state.account.subordinate_notes) {
    leash::v1::Finding finding;
    finding.set_severity(leash::v1::SEVERITY_INFO);
    finding.set_source(absl::StrCat("agent:", state.account.name));
    finding.set_field("subordinate_ids");
    finding.set_message(absl::StrCat(state.account.name, ": ", note));
    findings.push_back(std::move(finding));
  }
  if (uids.empty() && gids.empty()) return findings;
  std::string remove = "usermod";
  for (const engine::UidRange& range : uids) {
    absl::StrAppend(&remove, " --del-subuids ", range.first, "-", range.last);
  }
  for (const engine::UidRange& range : gids) {
    absl::StrAppend(&remove, " --del-subgids ", range.first, "-", range.last);
  }
  absl::StrAppend(&remove, " ", state.account.name);
  leash::v1::Finding finding;
  finding.set_severity(leash::v1::SEVERITY_WARNING);
  finding.set_source(absl::StrCat("agent:", state.account.name));
  finding.set_field("subordinate_ids");
  finding.set_entry(engine::FormatUidRanges(uids));
  finding.set_message(absl::StrCat(
      state.account.name, " holds subordinate UIDs ",
      uids.empty() ? "none" : engine::FormatUidRanges(uids), " and GIDs ",
      gids.empty() ? "none" : engine::FormatUidRanges(gids),
      " (/etc/subuid, /etc/subgid): with newuidmap it can run processes under those host IDs "
      "inside a user namespace of its own. Leash confines them as ", state.account.name,
      ", but an agent rarely needs them; remove them with: ", remove));
  findings.push_back(std::move(finding));
  return findings;
}

}  // namespace

using engine::LocateFindings;

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

ControlService::ControlService(ControlDeps deps) : deps_(std::move(deps)) {}

HostInputs ControlService::Host() const {
  HostInputs host;
  host.floor = LoadFloor(deps_.config_path);
  absl::StatusOr<std::vector<Account>> agents = deps_.accounts->ListAgentAccounts();
  if (agents.ok()) {
    for (const Account& a : *agents) host.agent_accounts.push_back(a.name);
  }
  host.read_lists = [folder = host::ListFolderFor(deps_.config_path)](
                        const std::vector<const leash::v1::Config*>& configs) {
    return host::ReadListFiles(configs, folder);
  };
  return host;
}

engine::StartFacts ControlService::StartFacts() const {
  engine::StartFacts facts;
  facts.user_exists = [accounts = deps_.accounts](absl::string_view name) -> absl::StatusOr<bool> {
    absl::StatusOr<std::optional<Account>> found = accounts->Lookup(name);
    if (!found.ok()) return found.status();
    return found->has_value();
  };
  return facts;
}

grpc::Status ControlService::Finish(const absl::StatusOr<WriteOutcome>& outcome,
                                    bool no_reconcile, leash::v1::PolicyWriteResponse* response) {
  if (!outcome.ok()) return ToGrpc(outcome.status());
  *response = outcome->ToResponse();
  if (outcome->written && !no_reconcile) {
    // One reconcile follows the whole write.
    *response->mutable_reconcile() = deps_.loop->RequestAndWait(deps_.reconcile_timeout);
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::EditFloor(
    absl::string_view what,
    const std::function<absl::StatusOr<bool>(leash::v1::Config&, leash::v1::Refusal&)>& edit,
    const std::function<absl::StatusOr<std::string>(absl::string_view)>& edit_text,
    FloorConsent& consent, bool no_reconcile, leash::v1::PolicyWriteResponse* response) {
  WriteOutcome outcome;
  {
    absl::MutexLock lock(&floor_mu_);
    absl::StatusOr<FloorText> floor = LoadFloorText(deps_.config_path);
    if (!floor.ok()) return ToGrpc(floor.status());
    leash::v1::Config& config = floor->config;
    const leash::v1::Config floor_before = config;
    leash::v1::Refusal refusal;
    absl::StatusOr<bool> changed = edit(config, refusal);
    if (!changed.ok()) return ToGrpc(changed.status());
    // Judged as validate judges it: the floor as read and as edited, with the tiers and named
    // lists as they are, and what leashd needs to start on it.
    auto validate = [&]() -> absl::StatusOr<std::optional<leash::v1::Refusal>> {
      HostInputs host = Host();
      absl::StatusOr<Snapshot> snapshot = deps_.store->ReadSnapshot();
      if (!snapshot.ok()) return snapshot.status();
      std::vector<leash::v1::Finding> before =
          JudgePolicy(host, floor_before, snapshot->bindings, snapshot->profiles);
      std::vector<leash::v1::Finding> after =
          JudgePolicy(host, config, snapshot->bindings, snapshot->profiles);
      for (leash::v1::Finding& finding :
           engine::ValidateStart(floor_before, deps_.config_path, StartFacts())) {
        before.push_back(std::move(finding));
      }
      for (leash::v1::Finding& finding :
           engine::ValidateStart(config, deps_.config_path, StartFacts())) {
        after.push_back(std::move(finding));
      }
      return engine::RefuseNewErrors(what, before, after);
    };
    if (!refusal.kind().empty()) {
      outcome.refusal = refusal;
      // A consent refusal is judged completely: its re-run line makes exactly this edit, so
      // when validate would refuse the edit the line is not printed and the findings are.
      if (*changed && refusal.kind() == engine::kRefusalLoosening && !refusal.rerun().empty()) {
        absl::StatusOr<std::optional<leash::v1::Refusal>> invalid = validate();
        if (!invalid.ok()) return ToGrpc(invalid.status());
        if (*invalid) outcome.refusal = engine::CompleteRefusal(refusal, **invalid);
      }
    } else if (*changed) {
      absl::StatusOr<std::optional<leash::v1::Refusal>> invalid = validate();
      if (!invalid.ok()) return ToGrpc(invalid.status());
      if (*invalid) {
        outcome.refusal = **std::move(invalid);
        return Finish(outcome, no_reconcile, response);
      }
      absl::StatusOr<std::optional<Account>> user = deps_.accounts->Lookup(config.user());
      if (!user.ok()) return ToGrpc(user.status());
      if (!user->has_value()) {
        return ToGrpc(absl::FailedPreconditionError(
            absl::StrCat("the configured user '", config.user(), "' does not exist")));
      }
      // The consent is on the ledger before the floor changes, or the floor does not change.
      if (std::optional<leash::v1::Refusal> unrecorded = deps_.store->RecordFloorConsent(
              consent.who, what, consent.acks, outcome.notices)) {
        outcome.refusal = *std::move(unrecorded);
        return Finish(outcome, no_reconcile, response);
      }
      // The same edit made in the operator's text keeps its comments and layout.
      absl::StatusOr<FloorWrite> written = WriteEditedFloor(
          deps_.config_path, floor->text, edit_text(floor->text), config, deps_.floor_owner,
          (*user)->gid);
      if (!written.ok()) return ToGrpc(written.status());
      outcome.written = true;
      if (!written->text_kept) outcome.notices.push_back(written->notice);
      for (std::string& notice : consent.notices) outcome.notices.push_back(std::move(notice));
    }
  }
  return Finish(outcome, no_reconcile, response);
}

void ControlService::JudgeFloorChange(const leash::v1::Config& before,
                                      const leash::v1::Config& after, absl::string_view what,
                                      const std::vector<std::string>& words,
                                      const std::vector<std::string>& acks,
                                      leash::v1::Refusal& refusal, FloorConsent& consent) {
  engine::FloorEditJudgement judgement = engine::JudgeFloorEdit(before, after, what, words, acks);
  if (judgement.refusal) {
    refusal = *std::move(judgement.refusal);
    return;
  }
  consent.acks = std::move(judgement.consent);
  consent.notices = std::move(judgement.notices);
}

grpc::Status ControlService::AddEntry(grpc::ServerContext* context,
                                      const leash::v1::AddEntryRequest* r,
                                      leash::v1::PolicyWriteResponse* response) {
  if (r->list() == leash::v1::LIST_KIND_UNSPECIFIED) {
    return ToGrpc(absl::InvalidArgumentError("say which list: allow or deny"));
  }
  const bool allow = r->list() == leash::v1::LIST_KIND_ALLOW;
  const std::string surface(engine::SurfaceName(r->surface()));
  const std::string what = absl::StrCat(surface, allow ? " allow " : " deny ", r->entry());
  const std::vector<std::string> acks(r->acks().begin(), r->acks().end());
  FloorConsent consent{Caller(context, r->who())};
  return EditFloor(
      what,
      [&](leash::v1::Config& floor, leash::v1::Refusal& refusal) -> absl::StatusOr<bool> {
        const leash::v1::Config before = floor;
        leash::v1::InertEntry inert;
        absl::StatusOr<bool> added = AddFloorEntry(floor, r->surface(), allow, r->entry(), &inert);
        if (absl::IsInvalidArgument(added.status()) && !inert.field().empty()) {
          refusal = engine::MakeRefusal(
              engine::kRefusalEntry,
              absl::StrCat("refused on write: ", added.status().message()));
          *refusal.add_inert_entries() = inert;
          return false;
        }
        if (!added.ok() || !*added) return added;
        // An allow on a whitelist floor widens every subject: judged as the floor before and
        // after, like a removal.
        JudgeFloorChange(before, floor, absl::StrCat("adding '", r->entry(), "' to the floor's ",
                                                     surface, allow ? ".allow" : ".deny"),
                         {"sudo", "leash", surface, allow ? "allow" : "deny", r->entry()}, acks,
                         refusal, consent);
        return true;
      },
      [&](absl::string_view text) {
        return PatchFloorEntry(text, r->surface(), allow, r->entry());
      },
      consent, r->no_reconcile(), response);
}

grpc::Status ControlService::SetMode(grpc::ServerContext* context,
                                     const leash::v1::SetModeRequest* r,
                                     leash::v1::PolicyWriteResponse* response) {
  if (r->mode() == leash::v1::MODE_UNSPECIFIED) {
    return ToGrpc(absl::InvalidArgumentError("mode must be whitelist or blacklist"));
  }
  const std::string surface(engine::SurfaceName(r->surface()));
  const std::string mode(engine::ModeName(r->mode()));
  const std::vector<std::string> acks(r->acks().begin(), r->acks().end());
  FloorConsent consent{Caller(context, r->who())};
  return EditFloor(
      absl::StrCat(surface, " mode ", mode),
      [&](leash::v1::Config& floor, leash::v1::Refusal& refusal) -> absl::StatusOr<bool> {
        const leash::v1::Config before = floor;
        absl::StatusOr<bool> set = SetFloorMode(floor, r->surface(), r->mode());
        if (!set.ok() || !*set) return set;
        JudgeFloorChange(before, floor,
                         absl::StrCat("switching the floor's ", surface, " to ", mode),
                         {"sudo", "leash", surface, "mode", mode}, acks, refusal, consent);
        return true;
      },
      [&](absl::string_view text) { return PatchFloorMode(text, r->surface(), r->mode()); },
      consent, r->no_reconcile(), response);
}

grpc::Status ControlService::SaveProfile(grpc::ServerContext* context,
                                         const leash::v1::SaveProfileRequest* r,
                                         leash::v1::PolicyWriteResponse* response) {
  SaveProfileArgs args;
  args.who = Caller(context, r->who());
  args.name = r->name();
  args.yaml = r->yaml();
  args.acks.assign(r->acks().begin(), r->acks().end());
  args.from_path = r->from_path();
  return Finish(deps_.store->SaveProfile(args, Host()), r->no_reconcile(), response);
}

grpc::Status ControlService::DeleteProfile(grpc::ServerContext* context,
                                           const leash::v1::DeleteProfileRequest* r,
                                           leash::v1::PolicyWriteResponse* response) {
  std::vector<std::string> acks(r->acks().begin(), r->acks().end());
  return Finish(deps_.store->DeleteProfile(r->name(), acks, Host(), Caller(context, r->who())),
                r->no_reconcile(), response);
}

grpc::Status ControlService::Bind(grpc::ServerContext* context, const leash::v1::BindRequest* r,
                                  leash::v1::PolicyWriteResponse* response) {
  std::vector<std::string> acks(r->acks().begin(), r->acks().end());
  return Finish(deps_.store->Bind(r->scope(), r->profile(), acks, Host(),
                                  Caller(context, r->who())),
                r->no_reconcile(), response);
}

std::string ControlService::Caller(grpc::ServerContext* context, absl::string_view claim) const {
  // What leashd saw on the socket is fact; what the client says of itself (the operator behind
  // sudo, the session's login UID) cannot be checked, so it is recorded as its claim.
  std::optional<ucred> peer;
  if (deps_.caller && context != nullptr) peer = deps_.caller(*context);
  return DescribeUnbindCaller(peer, claim);
}

grpc::Status ControlService::Unbind(grpc::ServerContext* context,
                                    const leash::v1::UnbindRequest* r,
                                    leash::v1::PolicyWriteResponse* response) {
  std::vector<std::string> acks(r->acks().begin(), r->acks().end());
  return Finish(deps_.store->Unbind(r->scope(), acks, Caller(context, r->who()), Host()),
                r->no_reconcile(), response);
}

grpc::Status ControlService::ListProfiles(grpc::ServerContext*,
                                          const leash::v1::ListProfilesRequest*,
                                          leash::v1::ListProfilesResponse* response) {
  absl::StatusOr<leash::v1::ListProfilesResponse> list = deps_.store->ListProfiles();
  if (!list.ok()) return ToGrpc(list.status());
  *response = *std::move(list);
  return grpc::Status::OK;
}

grpc::Status ControlService::ShowProfile(grpc::ServerContext*, const leash::v1::ShowProfileRequest* r,
                                         leash::v1::ShowProfileResponse* response) {
  absl::StatusOr<leash::v1::ShowProfileResponse> shown = deps_.store->ShowProfile(r->name());
  if (!shown.ok()) return ToGrpc(shown.status());
  *response = *std::move(shown);
  return grpc::Status::OK;
}

grpc::Status ControlService::ListBindings(grpc::ServerContext*,
                                          const leash::v1::ListBindingsRequest*,
                                          leash::v1::ListBindingsResponse* response) {
  absl::StatusOr<leash::v1::ListBindingsResponse> list = deps_.store->ListBindings();
  if (!list.ok()) return ToGrpc(list.status());
  *response = *std::move(list);
  return grpc::Status::OK;
}

grpc::Status ControlService::Reconcile(grpc::ServerContext*, const leash::v1::ReconcileRequest*,
                                       leash::v1::ReconcileResponse* response) {
  *response->mutable_report() = deps_.loop->RequestAndWait(deps_.reconcile_timeout);
  return grpc::Status::OK;
}

grpc::Status ControlService::WatchDecisions(
    grpc::ServerContext* context, const leash::v1::WatchDecisionsRequest* request,
    grpc::ServerWriter<leash::v1::WatchDecisionsEvent>* writer) {
  // Claimed before anything is read or written, given back however the call ends.
  if (watchers_.fetch_add(1) >= kMaxDecisionWatchers) {
    watchers_.fetch_sub(1);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, TooManyWatchers());
  }
  struct Release {
    std::atomic<int>& count;
    ~Release() { count.fetch_sub(1); }
  } release{watchers_};
  // Each event is written as it comes. Not with gRPC's buffer hint: on the synchronous API a
  // write so marked does not complete until a later write flushes it, so the handler would wait
  // on itself after the replay's last line or a batch's.
  return ToGrpc(ServeWatchDecisions(
      *request, deps_.decisions, [context] { return context->IsCancelled(); },
      [writer](const leash::v1::WatchDecisionsEvent& event) { return writer->Write(event); }));
}

namespace {

void AddWouldBeBlocks(const std::vector<leash::v1::WouldBeBlocks>& counts,
                      std::map<uint32_t, leash::v1::WouldBeBlockCounts>& by_uid) {
  for (const leash::v1::WouldBeBlocks& count : counts) {
    leash::v1::WouldBeBlockCounts& to = by_uid[count.uid()];
    switch (count.surface()) {
      case leash::v1::SURFACE_NETWORK:
        to.set_network(to.network() + count.count());
        break;
      case leash::v1::SURFACE_FILESYSTEM:
        to.set_filesystem(to.filesystem() + count.count());
        break;
      case leash::v1::SURFACE_COMMANDS:
        to.set_commands(to.commands() + count.count());
        break;
      case leash::v1::SURFACE_TOOLS:
        to.set_tools(to.tools() + count.count());
        break;
      default:
        break;
    }
  }
}

}  // namespace

grpc::Status ControlService::GetStatus(grpc::ServerContext*, const leash::v1::StatusRequest*,
                                       leash::v1::StatusResponse* response) {
  response->set_config_path(deps_.config_path);
  response->set_single_subject(deps_.single_subject);
  absl::StatusOr<leash::v1::Config> floor = LoadFloor(deps_.config_path);
  if (floor.ok()) {
    response->set_user(floor->user());
    *response->mutable_floor() = engine::WithDefaults(*floor);
  } else {
    response->set_floor_error(std::string(floor.status().message()));
  }
  // Each enforcer counts its own surfaces: the proxy network, the watcher filesystem and
  // commands, the tools service tools.
  std::map<uint32_t, leash::v1::WouldBeBlockCounts> would_be_blocks;
  AddWouldBeBlocks(deps_.stream->WouldBeBlocks(leash::v1::SIDECAR_KIND_PROXY), would_be_blocks);
  AddWouldBeBlocks(deps_.stream->WouldBeBlocks(leash::v1::SIDECAR_KIND_FSWATCH), would_be_blocks);
  if (deps_.tools_would_be_blocks) AddWouldBeBlocks(deps_.tools_would_be_blocks(), would_be_blocks);
  for (const auto& [uid, view] : deps_.subjects->All()) {
    const SubjectState& state = view.state;
    if (state.configured_user) response->set_uid(uid);
    leash::v1::SubjectStatus* subject = response->add_subjects();
    subject->set_account(state.account.name);
    subject->set_uid(uid);
    subject->set_port(state.port);
    subject->set_state(!state.in_discovery ? "left-discovery"
                       : view.policy != nullptr        ? "enforced"
                                                      : "no-policy");
    subject->set_detail(state.problem);
    for (const std::string& source : state.sources) subject->add_profiles(source);
    if (view.policy != nullptr) *subject->mutable_policy() = view.policy->config();
    // What the account holds (what newuidmap grants it), not the share leashd could give it:
    // in a conflict the two differ, and the detail says why.
    AppendIdRanges(state.account.subordinate_uids, subject->mutable_subordinate_uids());
    AppendIdRanges(state.account.subordinate_gids, subject->mutable_subordinate_gids());
    *subject->mutable_would_be_blocks() = would_be_blocks[uid];
    if (deps_.netfilter != nullptr && state.chain.has_value()) {
      absl::StatusOr<NetfilterCounters> counters = deps_.netfilter->ReadCounters(uid);
      if (counters.ok()) {
        leash::v1::NetworkCounters* out = subject->mutable_counters();
        out->set_inbound_dropped_packets(counters->inbound_dropped_packets);
        out->set_inbound_allowed_packets(counters->inbound_allowed_packets);
        out->set_unproxied_dropped_packets(counters->unproxied_dropped_packets);
        out->set_loopback_dns_refused_packets(counters->loopback_dns_refused_packets);
      } else {
        subject->set_counters_error(std::string(counters.status().message()));
      }
    }
  }
  if (deps_.supervisor != nullptr) {
    for (const leash::v1::SidecarStatus& sidecar : deps_.supervisor->Status()) {
      *response->add_sidecars() = sidecar;
    }
  }
  response->set_map_version(deps_.stream->version());
  *response->mutable_last_reconcile() = deps_.loop->last_report();
  response->set_reconcile_passes(deps_.loop->passes());
  response->set_netfilter(deps_.netfilter_description);
  if (deps_.loopback_resolvers) {
    absl::StatusOr<std::vector<LoopbackResolver>> found = deps_.loopback_resolvers();
    if (found.ok()) {
      for (const LoopbackResolver& resolver : *found) {
        leash::v1::LoopbackResolver* out = response->add_loopback_resolvers();
        out->set_address(engine::FormatIpAddress(resolver.address));
        out->set_in_resolv_conf(resolver.in_resolv_conf);
        out->set_udp(resolver.udp);
        out->set_tcp(resolver.tcp);
      }
    } else {
      response->set_loopback_resolvers_error(std::string(found.status().message()));
    }
  }
  return grpc::Status::OK;
}

// What rule N15 of docs/ARCHITECTURE.md stands in front of on this host: its loopback
// resolvers (info), or why they could not be read (a warning: the rule holds regardless).
leash::v1::Finding ControlService::LoopbackResolverFinding() const {
  leash::v1::Finding finding;
  finding.set_source("host");
  finding.set_field("loopback resolvers");
  absl::StatusOr<std::vector<LoopbackResolver>> found = deps_.loopback_resolvers();
  if (!found.ok()) {
    finding.set_severity(leash::v1::SEVERITY_WARNING);
    finding.set_message(absl::StrCat("this host's loopback resolvers could not be read (",
                                     found.status().message(),
                                     "); an agent's DNS to any loopback address still goes to "
                                     "its filter, or is refused"));
    return finding;
  }
  finding.set_severity(leash::v1::SEVERITY_INFO);
  std::vector<std::string> described;
  for (const LoopbackResolver& resolver : *found) {
    described.push_back(DescribeLoopbackResolver(resolver));
  }
  finding.set_message(
      described.empty()
          ? std::string("this host answers DNS on no loopback address")
          : absl::StrCat("this host answers DNS on loopback at ", absl::StrJoin(described, ", "),
                         ": an agent's DNS to any of them goes to its filter (network.dns: "
                         "filter), or is refused unless it is one of its own resolvers "
                         "(network.dns: resolvers)"));
  return finding;
}

grpc::Status ControlService::Validate(grpc::ServerContext*, const leash::v1::ValidateRequest*,
                                      leash::v1::ValidateResponse* response) {
  HostInputs host = Host();
  absl::StatusOr<FloorText> floor = LoadFloorText(deps_.config_path);
  std::vector<leash::v1::Finding> findings;
  if (!floor.ok()) {
    leash::v1::Finding& finding = findings.emplace_back();
    finding.set_severity(leash::v1::SEVERITY_CRITICAL);
    finding.set_source("floor");
    finding.set_message(std::string(floor.status().message()));
    host.floor = floor.status();
  } else {
    host.floor = floor->config;
    // What leashd would refuse to start on, were it started now.
    findings = engine::ValidateStart(floor->config, deps_.config_path, StartFacts());
  }
  // The floor's, the tiers', the named lists' (JudgePolicy, what writes are judged by) and the
  // unbind ledger's.
  absl::StatusOr<std::vector<leash::v1::Finding>> policy = deps_.store->Validate(host);
  if (!policy.ok()) return ToGrpc(policy.status());
  for (leash::v1::Finding& finding : *policy) findings.push_back(std::move(finding));
  // Each finding about a key of the floor or a profile says where the key is written.
  if (floor.ok()) LocateFindings(floor->text, deps_.config_path, "floor", findings);
  absl::StatusOr<std::vector<std::string>> names = deps_.store->profiles().List();
  if (names.ok()) {
    for (const std::string& name : *names) {
      absl::StatusOr<ProfileStore::Loaded> loaded = deps_.store->profiles().Load(name);
      if (!loaded.ok()) continue;
      LocateFindings(loaded->yaml, deps_.store->profiles().PathFor(name),
                     absl::StrCat("profile:", name), findings);
    }
  }
  for (leash::v1::Finding& finding : findings) *response->add_findings() = std::move(finding);
  for (leash::v1::Finding& finding : host::ExecRouteFindings(host::ReadExecRoutes())) {
    *response->add_findings() = std::move(finding);
  }
  if (deps_.loopback_resolvers) *response->add_findings() = LoopbackResolverFinding();
  for (const auto& [uid, view] : deps_.subjects->All()) {
    for (leash::v1::Finding& finding : SubordinateIdFindings(view.state)) {
      *response->add_findings() = std::move(finding);
    }
  }
  response->set_failed(engine::HasBlockingFinding(
      {response->findings().begin(), response->findings().end()}));
  response->set_evaluated_by("leashd");
  response->set_config_path(deps_.config_path);
  return grpc::Status::OK;
}

grpc::Status ControlService::Check(grpc::ServerContext*, const leash::v1::CheckRequest* r,
                                   leash::v1::CheckResponse* response) {
  std::optional<SubjectView> subject = r->account().empty()
                                           ? deps_.subjects->ConfiguredUser()
                                           : deps_.subjects->ByAccount(r->account());
  if (!subject) {
    return ToGrpc(absl::NotFoundError(absl::StrCat(
        "'", r->account().empty() ? "the configured user" : r->account(),
        "' is not a subject leashd enforces (see `leash status`)")));
  }
  response->set_account(subject->state.account.name);
  response->set_evaluated_by("leashd");
  if (subject->policy == nullptr) {
    engine::Decision blocked;
    blocked.reason = absl::StrCat(engine::SurfaceName(r->surface()), ": ",
                                  subject->state.account.name,
                                  " has no policy and is denied everything (", subject->state.problem, ")");
    *response->mutable_decision() = blocked.ToProto();
    return grpc::Status::OK;
  }
  std::string resolved;
  absl::StatusOr<engine::Decision> decision =
      host::DecideCheckSubject(*subject->policy, r->surface(), r->subject(), resolved);
  if (!decision.ok()) return ToGrpc(decision.status());
  *response->mutable_decision() = decision->ToProto();
  response->set_resolved(resolved);
  return grpc::Status::OK;
}

}  // namespace leash::controlplane
