// The policy stores leashd owns under its state folder (/var/lib/leash; a constructor
// parameter, so every test runs in its own temp folder):
//   profiles/<name>.yaml   ProfileStore: named fragments.
//   bindings.yaml          BindingStore: scope -> profile + acks.
//   unbinds.jsonl          the unbind ledger (unbind_ledger.h).
//   bindings.lock          the one bindings writer lock (bindings_lock.h).
// Judgement is the engine's (engine/consent.h); this file reads, locks, orders and writes.
//
// API (for leashd's Control handlers — each returns a WriteOutcome that maps onto
// leash.v1.PolicyWriteResponse — and its reconcile):
//   BindingStore::SaveProfile / DeleteProfile / Bind / Unbind   the four policy writes.
//   BindingStore::ReadSnapshot()   bindings + every profile, read under the shared lock, for
//                                  engine::Resolver (the floor is the caller's).
//   BindingStore::Validate()       validate's tier findings (stale acks ...) and ledger
//                                  problems (a torn last line).
//   ListProfiles / ShowProfile / ListBindings.
// Every write goes through atomic_file.h (temp + fsync + rename + fsync of the folder), whose
// fault hook a crash test uses to kill a writer at each step. Nothing here signals leashd; the
// caller reconciles after a written outcome (one SIGHUP follows the whole write).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controlplane/parse_memo.h"
#include "controlplane/unbind_ledger.h"
#include "engine/named_lists.h"
#include "engine/tiers.h"
#include "leash/v1/control.pb.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::controlplane {

// The result of a policy write the operator asked for. Exactly one of: written (the change is
// on disk), or refusal (nothing was written). I/O failures are the Status around it.
struct WriteOutcome {
  bool written = false;
  std::optional<leash::v1::Refusal> refusal;
  // Said out loud: "bind global changes the floor for every subject on the host", bindings
  // left dangling by a delete, acks not needed, a torn ledger line ...
  std::vector<std::string> notices;

  // written, refusal and notices as the Control RPCs return them (reconcile is the caller's).
  leash::v1::PolicyWriteResponse ToResponse() const;
};

// What leashd knows that the stores do not read themselves.
struct HostInputs {
  // The floor (/etc/leash/leash.yaml) as loaded, or why it could not be.
  absl::StatusOr<leash::v1::Config> floor = absl::UnavailableError("floor not given");
  // The discovered agent accounts (controlplane/account_source.h ListAgentAccounts names).
  std::vector<std::string> agent_accounts;
  // The named lists the given policies use, read from the host (proto/host/list_files.h), for
  // validate's judgement of them. Unset: lists are not judged (the stores' own tests).
  std::function<engine::ListTexts(const std::vector<const leash::v1::Config*>&)> read_lists;
};

// validate's judgement of the policy `floor`, `bindings` and `profiles` make, with `host`'s
// agents and named lists (engine::ValidatePolicy): what `leash validate` reports of the policy,
// and what every policy write is judged by before and after (engine::RefuseNewErrors), so a
// write cannot land what validate then calls an error.
std::vector<leash::v1::Finding> JudgePolicy(const HostInputs& host, const leash::v1::Config& floor,
                                            const engine::Bindings& bindings,
                                            const engine::ProfileLibrary& profiles);

// Profiles: <state>/profiles/<name>.yaml. Reads only; writes go through BindingStore, under the
// bindings writer lock ("the profile library has none of its own").
class ProfileStore {
 public:
  explicit ProfileStore(std::string state_dir);

  // A profile name: 1-64 of [A-Za-z0-9._-], not starting with '.' or '-' (no dot-files, nothing
  // an option parser takes for a flag), no "..", no path separator. InvalidArgument says why.
  static absl::Status ValidateName(absl::string_view name);

  std::string dir() const { return dir_; }
  std::string PathFor(absl::string_view name) const;

  struct Loaded {
    std::string name;
    std::string yaml;
    // The fragment, or the parse error (accepted on load: the subjects bound to it fail
    // closed, every other subject is untouched).
    absl::StatusOr<leash::v1::Config> fragment;
    // Entries that can never match: accepted on load and reported.
    std::vector<leash::v1::InertEntry> inert;
  };

  // NotFound when there is no such profile; InvalidArgument for a bad name.
  absl::StatusOr<Loaded> Load(absl::string_view name) const;
  // Every profile name, sorted (files <name>.yaml with a valid name; temp files are not).
  absl::StatusOr<std::vector<std::string>> List() const;
  // Every profile, as the resolver takes them.
  absl::StatusOr<engine::ProfileLibrary> LoadLibrary() const;

  // Judges `yaml` for writing as profile `name`: the name, the YAML (a fragment: ConfigKind::
  // kProfile), and entries that can never match — refused on write (kind "entry"). Returns the
  // fragment, or sets `refusal`.
  std::optional<leash::v1::Config> CheckForWrite(absl::string_view name, absl::string_view yaml,
                                                 leash::v1::Refusal& refusal) const;

 private:
  std::string dir_;
  // Unchanged profile files are not parsed again.
  std::shared_ptr<ParseMemo<absl::StatusOr<Loaded>>> memo_ =
      std::make_shared<ParseMemo<absl::StatusOr<Loaded>>>();
};

struct SaveProfileArgs {
  std::string name;
  std::string yaml;
  // Per-agent consent, "agent:<account>=<field>:<value>" each.
  std::vector<std::string> acks;
  // The file the CLI read the YAML from, for the re-run line (default "<name>.yaml").
  std::string from_path;
  // Who asked, for the consent ledger (peer credentials, then the client's claim).
  std::string who;
};

// A consistent read of bindings and every profile (under the shared lock).
struct Snapshot {
  engine::Bindings bindings;
  engine::ProfileLibrary profiles;
  // Profiles that load with entries that can never match, or do not load at all: reported.
  std::vector<leash::v1::Finding> findings;
};

class BindingStore {
 public:
  struct Options {
    Options() = default;
    explicit Options(std::string dir) : state_dir(std::move(dir)) {}
    // The state folder; /var/lib/leash in production.
    std::string state_dir;
    // The clock for ledger records.
    std::function<absl::Time()> now = [] { return absl::Now(); };
    // Test seam: called by Bind after it judged the profile and before it takes the writer
    // lock, so a test can change the profile in between.
    std::function<void()> after_bind_judgement_for_testing;
  };

  explicit BindingStore(Options options);

  const ProfileStore& profiles() const { return profiles_; }
  const UnbindLedger& ledger() const { return ledger_; }
  std::string bindings_path() const;

  // `leash profile save`. Under the writer lock: re-reads the bindings, judges the edit
  // against every binding naming the profile as they are then, writes the bindings that gained
  // consent first and the profile second; if the profile write fails, puts the bindings back
  // before releasing the lock. Consent the edit took for the change itself (a bound subject
  // resolved before and after, e.g. a deny dropped) is appended to the ledger first, with
  // args.who. Refusals: kind "profile" (name, YAML), "entry", "ack", "loosening" (naming each
  // subject and token), "unjudgeable" (floor unreadable), "validate", "ledger".
  absl::StatusOr<WriteOutcome> SaveProfile(const SaveProfileArgs& args, const HostInputs& host);

  // `leash profile delete [--ack 'dangling:<scope>']...`. Under the writer lock: a delete that
  // would leave a binding naming the profile dangling (its subjects denied everything) is
  // refused (kind "dangling", engine::JudgeProfileDelete) unless each such binding is
  // acknowledged; with consent the outcome says what each now denies and how to end it. The
  // consent is written to the ledger (kind profile-delete, `who`) before the profile is removed.
  // Refusal: kind "profile" (bad name, none), "ack", "ledger" (nothing removed).
  absl::StatusOr<WriteOutcome> DeleteProfile(absl::string_view name,
                                             const std::vector<std::string>& acks,
                                             const HostInputs& host, absl::string_view who = "");

  // Appends the consent a floor edit took (`acks`, kind floor-edit, scope "floor") to the
  // ledger before the floor is written; the "ledger" refusal, saying the floor was not changed
  // by `what`, when it cannot be. The caller holds the floor's writer lock.
  std::optional<leash::v1::Refusal> RecordFloorConsent(absl::string_view who,
                                                       absl::string_view what,
                                                       const std::vector<std::string>& acks,
                                                       std::vector<std::string>& notices) const;

  // `leash bind <scope> <profile> [--ack ...]`. Judges, then under the writer lock re-checks
  // that the profile it judged is still the one on disk (else kind "changed") and judges
  // again against the bindings as they are then. Consent the change itself took (each reached
  // subject resolved before and after, e.g. a rebind dropping a deny) is appended to the
  // ledger, with `who`, before bindings.yaml is written. Refusals: "scope", "profile",
  // "entry", "ack", "loosening", "changed", "unjudgeable", "validate", "ledger".
  absl::StatusOr<WriteOutcome> Bind(absl::string_view scope, absl::string_view profile,
                                    const std::vector<std::string>& acks, const HostInputs& host,
                                    absl::string_view who = "");

  // `leash unbind <scope> [--ack ...]`. Under the writer lock: judges the removal (engine::
  // JudgeUnbind), appends and fsyncs the ledger record {time, who, scope, profile, acks}, and
  // only then removes the binding. A record that cannot be written refuses the unbind (kind
  // "ledger") with the binding untouched.
  absl::StatusOr<WriteOutcome> Unbind(absl::string_view scope,
                                      const std::vector<std::string>& acks, absl::string_view who,
                                      const HostInputs& host);

  // Bindings and profiles read together under the shared lock. An absent state folder is an
  // empty snapshot. An error (bindings.yaml unreadable or not parsing) means nothing can be
  // resolved from it: a reconcile fails wholesale and changes nothing.
  absl::StatusOr<Snapshot> ReadSnapshot() const;

  // validate's findings: JudgePolicy (the floor's own findings; stale acks, dead scopes,
  // dangling bindings, unresolvable subjects, each profile's own findings; named lists) and
  // every ledger problem. Nothing of the floor when host.floor does not load.
  absl::StatusOr<std::vector<leash::v1::Finding>> Validate(const HostInputs& host) const;

  absl::StatusOr<leash::v1::ListProfilesResponse> ListProfiles() const;
  // NotFound for no such profile.
  absl::StatusOr<leash::v1::ShowProfileResponse> ShowProfile(absl::string_view name) const;
  absl::StatusOr<leash::v1::ListBindingsResponse> ListBindings() const;

 private:
  // What a writer works on: the exclusive writer lock, and bindings and profiles as they are
  // under it.
  struct Locked;
  // Takes the writer lock, sweeps a killed writer's temp files, reads bindings and profiles.
  absl::StatusOr<Locked> LockForWrite() const;
  // Appends the consent `acks` a write of `kind` took to the ledger (nothing when none); the
  // "ledger" refusal, saying `unchanged`, when the record cannot be written. Under the writer
  // lock. Adds to `notices` what it recorded (and a torn line it stepped over).
  std::optional<leash::v1::Refusal> RecordConsent(absl::string_view kind, absl::string_view who,
                                                  absl::string_view scope,
                                                  absl::string_view profile,
                                                  const std::vector<std::string>& acks,
                                                  absl::string_view unchanged,
                                                  std::vector<std::string>& notices) const;
  // Creates the state and profiles folders (0750) when absent.
  absl::Status EnsureFolders() const;
  // bindings.yaml's text (nullopt when absent) and its parse; under a lock held by the caller.
  absl::Status ReadBindingsLocked(std::optional<std::string>& text,
                                  engine::Bindings& bindings) const;
  // Writes `text` to bindings.yaml, or removes it when nullopt (restoring "absent").
  absl::Status RestoreBindings(const std::optional<std::string>& text) const;
  // Removes temp files a killed writer left (called under the exclusive lock).
  void SweepTempFiles() const;

  Options options_;
  ProfileStore profiles_;
  UnbindLedger ledger_;
  // An unchanged bindings.yaml is not parsed again.
  std::shared_ptr<ParseMemo<absl::StatusOr<engine::Bindings>>> bindings_memo_ =
      std::make_shared<ParseMemo<absl::StatusOr<engine::Bindings>>>();
};

}  // namespace leash::controlplane
