// One reconcile pass: re-read the account database, re-resolve every subject, and change only
// what differs (docs/ARCHITECTURE.md, rules C1, C2 and C6).
//
//  - a new subject gets a port, is published to the sidecars as denied and acked by the
//    watcher (and the proxy, whose listener must exist) BEFORE its chain goes in, then gets its
//    policy;
//  - the policies go out once per pass, after every chain: what a chain or a listener that
//    failed denies is known by then. A pass that onboards (new subjects, moved ranges or
//    ports, listeners to retry) publishes once before its chains too; after them it sends only
//    what that first publish did not already put in the sidecars, so a pass that only moves a
//    subject publishes once and a pass that brings in a new subject twice. Why one publish
//    cannot serve a new subject is in docs/ARCHITECTURE.md ("Where the rules left a choice");
//  - a changed subject is re-published and its chain alone re-applied;
//  - an unchanged subject is not touched at all;
//  - a subject that left discovery loses its policy (published as no-policy: every connection
//    refused, every fs/exec event denied) and keeps its chain — "renamed out of the prefix",
//    "really deleted" and "the name service answered with a short list" look the same;
//  - one subject that will not resolve, apply or bind is denied alone and said out loud;
//  - a subject that cannot get a proxy port still gets a chain: the refuse-all one (port 0), and
//    is given a port on the first pass after one frees up;
//  - a pass that fails wholesale (passwd unreadable, the port map corrupt, the floor
//    unreadable) changes nothing at all: "I could not look" never becomes "nothing to confine".
//
// Not thread-safe: the ReconcileLoop runs passes one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controlplane/account_source.h"
#include "proto/host/command_links.h"
#include "controlplane/netfilter.h"
#include "controlplane/policy_source.h"
#include "controlplane/parse_memo.h"
#include "proto/policystream/policy_stream_service.h"
#include "controlplane/port_map.h"
#include "leash/v1/control.pb.h"

namespace leash::controlplane {

struct ReconcilerOptions {
  // The floor's `user`: a subject on every host, resolved to the floor.
  std::string configured_user;
  // The host had no agent accounts at start: the single-subject path (one listener on
  // 127.0.0.1:18443, no /var/lib/leash). It cannot grow its first agent; a pass says so.
  bool single_subject = false;
  // /var/lib/leash/ports.json (multi-subject only).
  std::string ports_path;
  // Which sidecars run (the floor's enforcers): a pass waits for their acks.
  bool network_enforced = true;
  bool filesystem_enforced = true;
  // How long a pass waits for a sidecar's ack before going on and saying so.
  absl::Duration ack_timeout = absl::Seconds(10);
  std::string resolv_conf_path = "/etc/resolv.conf";
  // Where command name entries are looked up for same-named links (ResolveCommandLinks).
  std::vector<std::string> command_search_path = host::SystemCommandPath();
  // Where the kernel settings behind the exec routes are read ("": the host's /proc, /dev).
  std::string exec_routes_root;
  // The tools socket's request cap (leashd --tools-max-request-bytes); 0: no tools socket. A
  // subject whose tools.max_input_bytes does not fit under it is warned about on every pass.
  uint64_t tools_max_request_bytes = 0;
  // Whether a port can carry an account's traffic (leashd: it holds the port's sockets). A new
  // account is never given one that cannot, and an account whose port cannot is moved to a
  // fresh one (said as critical). Null: every port.
  std::function<bool(uint16_t)> port_usable;
  // Called at the start of every pass (leashd: takes back every proxy port it does not hold
  // yet, so a port freed since the last pass is usable in this one). Returns lines to say.
  std::function<std::vector<std::string>()> retake_ports;
  // Who holds the proxy ports leashd does not ("uid 1001 (x) pid 42 (y) holds tcp 18000-18999"),
  // said in a portless subject's denial. Null or "": not known.
  std::function<std::string()> port_holders;
};

// A subject as leashd has put it in force.
struct SubjectState {
  Account account;
  bool configured_user = false;
  uint16_t port = 0;
  bool in_discovery = true;
  // What the sidecars were last sent (policy or no_policy), and its Fingerprint.
  leash::v1::SubjectPolicy published;
  std::string fingerprint;
  // The chain in the kernel, when one was applied (absent: none, or the network enforcer is
  // off for this subject).
  std::optional<NetfilterSubject> chain;
  std::vector<std::string> sources;
  // Why the subject is denied, when it is ("" when it has its policy).
  std::string problem;
  // The subordinate UID ranges that are this subject's too (subordinate_plan.h), and the GID
  // ranges its account holds.
  std::vector<engine::UidRange> subordinate_uids;
  std::vector<engine::UidRange> subordinate_gids;
};

// Appends `ranges` to a message's repeated IdRange field (SubjectPolicy, SubjectStatus).
void AppendIdRanges(const std::vector<engine::UidRange>& ranges,
                    google::protobuf::RepeatedPtrField<leash::v1::IdRange>* out);

// Deterministic bytes of what a subject was sent: equal exactly when nothing changed.
std::string Fingerprint(const leash::v1::SubjectPolicy& policy);

class Reconciler {
 public:
  // `netfilter` may be null when the network enforcer is off. None are owned.
  Reconciler(ReconcilerOptions options, AccountSource* accounts, PolicySource* policies,
             Netfilter* netfilter, policystream::PolicyStreamService* stream);

  // Runs one pass and reports what it changed. Never throws; a wholesale failure is
  // report.error with nothing changed.
  leash::v1::ReconcileReport RunPass();

  // The subjects in force, by UID.
  const std::map<uint32_t, SubjectState>& subjects() const { return subjects_; }
  const ReconcilerOptions& options() const { return options_; }

 private:
  struct Desired {
    Account account;
    bool configured_user = false;
    uint16_t port = 0;
    bool in_discovery = true;
    leash::v1::SubjectPolicy policy;
    std::optional<NetfilterSubject> chain;
    std::vector<std::string> sources;
    std::string problem;
    std::vector<engine::UidRange> subordinate_uids;
    // The subordinate UIDs its chain holds once this pass is done (SubjectPolicy.
    // subordinate_uids_in_chain): subordinate_uids, or the old chain's where the new one would
    // not apply.
    std::vector<engine::UidRange> uids_in_chain;
    std::vector<engine::UidRange> subordinate_gids;
    // The problem is the host's (no port, a chain that would not apply, a listener that would
    // not bind), not the policy files': the policy on disk is not in force for this subject.
    bool runtime_problem = false;
    // A new subject whose chain would not go in has no chain at all: its network traffic is
    // not redirected or filtered, whatever the sidecars are told. Said as such, not as
    // "denied everything" (the pass that applies the chain is the next one; leashd retries).
    bool network_unconfined = false;
  };

  // What one pass knows as it goes, step to step (reconciler.cc).
  struct Pass;

  // The steps of RunPass, in order. A step that returns false has failed wholesale and set
  // report.error; nothing has been changed by then.
  bool Look(Pass& pass);
  bool Plan(Pass& pass);
  bool SavePorts(Pass& pass);
  void Onboard(Pass& pass);
  void SettleListeners(Pass& pass);
  void Diff(Pass& pass);
  void ApplyChains(Pass& pass);
  void Publish(Pass& pass);
  void Report(Pass& pass);
  void Record(Pass& pass);

  // Plan's parts: who is wanted, whose subordinate IDs are whose, one subject's desired state,
  // and the subjects that left discovery.
  void PlanWanted(Pass& pass);
  bool PlanSubordinateIds(Pass& pass);
  Desired PlanSubject(Pass& pass, const Account& account);
  // PlanSubject's parts, in order: the port, the policy (or the denial), the DNS resolvers,
  // the chain.
  void PlanPort(Pass& pass, Desired& d);
  leash::v1::SubjectPolicy PlanPolicy(Pass& pass, Desired& d,
                                      const std::vector<std::string>& id_problems);
  static std::vector<engine::IpAddress> PlanResolvers(
      const std::vector<engine::IpAddress>& host_resolvers, leash::v1::SubjectPolicy& policy);
  std::optional<NetfilterSubject> PlanChain(const Pass& pass, const Desired& d,
                                            const leash::v1::SubjectPolicy& policy,
                                            const std::vector<engine::IpAddress>& resolvers) const;
  void PlanDeparted(Pass& pass);
  // ApplyChains' parts: the onboarded subjects' chains, then the changed subjects'.
  void ApplyOnboardingChains(Pass& pass);
  void ApplyChangedChains(Pass& pass);

  // Publishes `subjects` (none: nothing) and waits for each enforcing sidecar's ack.
  void PublishAndWait(const std::vector<leash::v1::SubjectPolicy>& subjects,
                      leash::v1::ReconcileReport& report);
  // The UIDs whose proxy listener the proxy's last ack says would not bind.
  std::set<uint32_t> UnboundListeners() const;
  // A runtime fact not in force (a later pass may put it right: report.retry); once each.
  static void AddNotInForce(leash::v1::ReconcileReport& report, const std::string& line);
  // Every pass, whether or not it published: each enforcing sidecar has acked the latest map,
  // and the watcher's ack says nothing failed.
  void CheckSidecarsInForce(leash::v1::ReconcileReport& report);
  // Says, for one subject, why it is denied and which of its entries can never match.
  void ReportSubject(const Desired& d, leash::v1::ReconcileReport& report) const;
  // Applies (or, when `chain` is absent, releases) one subject's chain; false on failure.
  bool ApplyChain(const Desired& desired, leash::v1::ReconcileReport& report);
  // Denies `d` for a fault of the host (a chain, a listener): it is not in force.
  void DenyAtRuntime(Desired& d, const std::string& problem, const Pass& pass) const;
  leash::v1::SubjectPolicy NoPolicy(const Desired& desired, const std::string& reason,
                                    const std::string& floor_fail_mode) const;
  // Writes the subject's subordinate ranges into what the sidecars are sent.
  static void SetSubordinateIds(const Desired& desired, leash::v1::SubjectPolicy& policy);
  // ports.json as PortMap::Load reads it, parsed only when its text changed.
  absl::StatusOr<PortMap> LoadPorts();

  const ReconcilerOptions options_;
  AccountSource* const accounts_;
  PolicySource* const policies_;
  Netfilter* const netfilter_;
  policystream::PolicyStreamService* const stream_;
  std::map<uint32_t, SubjectState> subjects_;
  bool warned_first_agent_ = false;
  ParseMemo<absl::StatusOr<PortMap>> ports_memo_;
};

}  // namespace leash::controlplane
