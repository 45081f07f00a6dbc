// Control: the admin RPCs behind every `leash` command, served on the root-only admin socket.
// Reads answer from the subjects in force; writes go to the files leashd owns (the floor, the
// profiles, the bindings, the unbind ledger) through the stores that judge them, and each
// written change is followed by one reconcile (unless the caller asked for none) whose report
// goes back with the answer — "the policy is on disk and not in force" is never reported as
// success.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "controlplane/account_source.h"
#include "controlplane/floor_file.h"
#include "controlplane/loopback_resolvers.h"
#include "controlplane/netfilter.h"
#include "controlplane/policy_store.h"
#include "controlplane/reconcile_loop.h"
#include "controlplane/sidecar_supervisor.h"
#include "controlplane/subject_directory.h"
#include "controlplane/watch_decisions.h"
#include "engine/config_yaml.h"
#include "engine/validate.h"
#include "leash/v1/control.grpc.pb.h"
#include "proto/policystream/policy_stream_service.h"

namespace leash::controlplane {

// The largest request the admin socket takes: a profile's text at its cap
// (engine::kMaxPolicyYamlBytes, 1 MiB) with room for the request's other fields. Larger is
// refused by gRPC (RESOURCE_EXHAUSTED), which the CLI says as a sentence.
inline constexpr size_t kMaxAdminRequestBytes = 2 * engine::kMaxPolicyYamlBytes;

struct ControlDeps {
  std::string config_path;
  // Who owns the floor a write leaves behind: root in leashd; a unit test run without root
  // names itself, the one owner it may give a file.
  uid_t floor_owner = kFloorOwner;
  BindingStore* store = nullptr;
  AccountSource* accounts = nullptr;
  SubjectDirectory* subjects = nullptr;
  ReconcileLoop* loop = nullptr;
  policystream::PolicyStreamService* stream = nullptr;
  // Null when no sidecar runs.
  SidecarSupervisor* supervisor = nullptr;
  bool single_subject = false;
  // What enforces the network surface ("nftables", "iptables ...", or "off").
  std::string netfilter_description = "off";
  // Where status reads each subject's counters. Null when the network enforcer is off.
  Netfilter* netfilter = nullptr;
  // The tools service's would-be blocks (per subject UID; leashd counts them itself), for
  // status beside the sidecars' (from their heartbeats). Unset or empty: none.
  std::function<std::vector<leash::v1::WouldBeBlocks>()> tools_would_be_blocks;
  // The host's loopback resolvers, for status (controlplane/loopback_resolvers.h). Unset: none
  // shown.
  std::function<absl::StatusOr<std::vector<LoopbackResolver>>()> loopback_resolvers;
  // The decision stream (WatchDecisions): the hub and the log file to replay.
  WatchDecisionsDeps decisions;
  // How long a write waits for its reconcile.
  absl::Duration reconcile_timeout = absl::Seconds(60);
  // The credentials of the connection a call came on (SO_PEERCRED), for the unbind ledger;
  // null or nullopt when unknown.
  std::function<std::optional<ucred>(const grpc::ServerContextBase&)> caller;
};

// The unbind ledger's "who": the credentials leashd saw on the admin socket, e.g.
// "uid 0 (root), pid 4242", then "; claimed by the client: <claim>" when the client sent one.
std::string DescribeUnbindCaller(const std::optional<ucred>& peer, absl::string_view claim);

class ControlService final : public leash::v1::Control::Service {
 public:
  explicit ControlService(ControlDeps deps);

  grpc::Status GetStatus(grpc::ServerContext*, const leash::v1::StatusRequest*,
                         leash::v1::StatusResponse*) override;
  grpc::Status Validate(grpc::ServerContext*, const leash::v1::ValidateRequest*,
                        leash::v1::ValidateResponse*) override;
  grpc::Status Check(grpc::ServerContext*, const leash::v1::CheckRequest*,
                     leash::v1::CheckResponse*) override;
  grpc::Status AddEntry(grpc::ServerContext*, const leash::v1::AddEntryRequest*,
                        leash::v1::PolicyWriteResponse*) override;
  grpc::Status SetMode(grpc::ServerContext*, const leash::v1::SetModeRequest*,
                       leash::v1::PolicyWriteResponse*) override;
  grpc::Status RemoveEntry(grpc::ServerContext*, const leash::v1::RemoveEntryRequest*,
                           leash::v1::PolicyWriteResponse*) override;
  grpc::Status ListEntries(grpc::ServerContext*, const leash::v1::ListEntriesRequest*,
                           leash::v1::ListEntriesResponse*) override;
  grpc::Status SaveProfile(grpc::ServerContext*, const leash::v1::SaveProfileRequest*,
                           leash::v1::PolicyWriteResponse*) override;
  grpc::Status ListProfiles(grpc::ServerContext*, const leash::v1::ListProfilesRequest*,
                            leash::v1::ListProfilesResponse*) override;
  grpc::Status ShowProfile(grpc::ServerContext*, const leash::v1::ShowProfileRequest*,
                           leash::v1::ShowProfileResponse*) override;
  grpc::Status DeleteProfile(grpc::ServerContext*, const leash::v1::DeleteProfileRequest*,
                             leash::v1::PolicyWriteResponse*) override;
  grpc::Status Bind(grpc::ServerContext*, const leash::v1::BindRequest*,
                    leash::v1::PolicyWriteResponse*) override;
  grpc::Status Unbind(grpc::ServerContext*, const leash::v1::UnbindRequest*,
                      leash::v1::PolicyWriteResponse*) override;
  grpc::Status ListBindings(grpc::ServerContext*, const leash::v1::ListBindingsRequest*,
                            leash::v1::ListBindingsResponse*) override;
  grpc::Status Reconcile(grpc::ServerContext*, const leash::v1::ReconcileRequest*,
                         leash::v1::ReconcileResponse*) override;
  grpc::Status WatchDecisions(grpc::ServerContext*, const leash::v1::WatchDecisionsRequest*,
                              grpc::ServerWriter<leash::v1::WatchDecisionsEvent>*) override;

 private:
  // Who called, for the consent ledger: the peer credentials leashd saw on the socket, then
  // what the client claims of itself (DescribeUnbindCaller).
  std::string Caller(grpc::ServerContext* context, absl::string_view claim) const;
  // validate's finding about the host's loopback resolvers (deps_.loopback_resolvers is set).
  leash::v1::Finding LoopbackResolverFinding() const;
  // What the stores need from the host for one judgement: the floor, the agent accounts, the
  // named lists.
  HostInputs Host() const;
  // What leashd needs of the host to start on a floor (the leashed user resolves), asked of
  // the account source it runs with.
  engine::StartFacts StartFacts() const;
  // Fills `response` from a store outcome and, when written and wanted, reconciles.
  grpc::Status Finish(const absl::StatusOr<WriteOutcome>& outcome, bool no_reconcile,
                      leash::v1::PolicyWriteResponse* response);
  // Loads the floor, applies `edit`, writes it back (0640 root:<user>), then Finish. An edit
  // that would add an error to validate's judgement (JudgePolicy, engine::ValidateStart) is
  // refused (kind "validate") naming it; `what` names the edit in that refusal. An edit that
  // sets a consent refusal and returns true (the edit made, nothing to be written) has that
  // edit judged by validate too, as its re-run line would make it (engine::CompleteRefusal).
  // `edit_text` makes the same edit in the file's text, which is what is written when it reads
  // back to the edited Config, so the operator's comments and layout stay. The consent the
  // edit took (`consent`, filled by `edit` through JudgeFloorChange) is written to the ledger
  // before the floor; an edit whose record cannot be written is refused (kind "ledger").
  struct FloorConsent {
    // Who asked (Caller): what the ledger records.
    std::string who;
    // The acks the edit needed, all given.
    std::vector<std::string> acks;
    std::vector<std::string> notices;
  };
  grpc::Status EditFloor(
      absl::string_view what,
      const std::function<absl::StatusOr<bool>(leash::v1::Config&, leash::v1::Refusal&)>& edit,
      const std::function<absl::StatusOr<std::string>(absl::string_view)>& edit_text,
      FloorConsent& consent, bool no_reconcile, leash::v1::PolicyWriteResponse* response);
  // Judges the floor edit `before` -> `after` (engine::JudgeFloorEdit: every loosening needs
  // its token, `words` the operator's command for the re-run line): sets `refusal`, or fills
  // `consent`. For `edit` lambdas, which then return true (the edit made).
  static void JudgeFloorChange(const leash::v1::Config& before, const leash::v1::Config& after,
                               absl::string_view what, const std::vector<std::string>& words,
                               const std::vector<std::string>& acks,
                               leash::v1::Refusal& refusal, FloorConsent& consent);

  // RemoveEntry's NotFound for an entry the floor does not hold, naming the profiles that do.
  absl::Status NotInTheFloor(leash::v1::Surface surface, const std::vector<bool>& lists,
                             const std::string& entry) const;

  const ControlDeps deps_;
  // Floor edits are read-modify-write of one file: one at a time.
  absl::Mutex floor_mu_;
  // WatchDecisions calls being served (at most kMaxDecisionWatchers).
  std::atomic<int> watchers_{0};
};

// absl::Status -> grpc::Status, keeping the code and the message.
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace leash::controlplane
