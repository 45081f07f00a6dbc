// Consent: judging a policy write before anything is written. A bind, a profile edit and an
// unbind each become either a refusal (leash::v1::Refusal, see refusal.h) or exactly what to
// write, plus the notices to say out loud. Pure: the control plane (controlplane/
// policy_store.h) reads the files, calls these under its writer lock, and writes the result.
//
// API (for controlplane/policy_store and leashd's Validate):
//   BindingLoosenings()   what binding a fragment to a scope loosens, at write time.
//   JudgeBind()           `leash bind <scope> <profile> [--ack ...]`.
//   JudgeProfileEdit()    `leash profile save <name> [--ack 'agent:<account>=<token>' ...]`.
//   JudgeUnbind()         `leash unbind <scope> [--ack ...]`.
//   RefuseInertEntries()  the "entry" refusal for a fragment carrying entries that never match.
//   ValidateTiers()       validate findings for the tiers: stale acks, dead scopes, dangling
//                         bindings, subjects that do not resolve, profile findings.
//   ValidatePolicy()      validate's judgement of the whole policy (floor, tiers, named lists):
//                         what `leash validate` reports and what every write is judged by.
//   RefuseNewErrors()     the "validate" refusal for a write that would add an error to it.
//
// What is judged against what (docs/ARCHITECTURE.md, rules P3 to P6, and "Where the rules left
// a choice"):
//  - A global fragment is judged as an overlay against the unfolded floor first.
//  - An agent fragment is judged against the floor file and, when the global binding resolves,
//    also against the global-folded base the resolver will use at run start — so a loosening
//    the resolver would refuse late is refused at write time instead, with the same token.
//  - An unbind resolves the subject twice, with the binding and without it, exactly as run
//    start would, and asks the same loosening rules of every field that differs.
//  - So does every other write (change_consent.h): a bind (a rebind is an unbind plus a bind)
//    and a profile save resolve each subject they reach before and after; the consent this
//    takes is for the change itself and goes to the consent ledger, not onto a binding.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/loosening.h"
#include "engine/named_lists.h"
#include "engine/scope.h"
#include "engine/tiers.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

// What binding `fragment` to `scope` loosens at write time, each loosening once (by token):
// global against the floor; an agent against the floor and, when it resolves, the folded base.
std::vector<FieldChange> BindingLoosenings(const Resolver& current, const Scope& scope,
                                           const leash::v1::Config& fragment);

// The "entry" refusal when `fragment` carries entries that can never match; nullopt otherwise.
// `what` names the write, e.g. "profile 'web-research'".
std::optional<leash::v1::Refusal> RefuseInertEntries(absl::string_view what,
                                                     const leash::v1::Config& fragment);

// The "scope" refusal for a failed CheckScopeForWrite. `words` is the operator's command with
// the scope at `scope_word` (e.g. {"sudo","leash","bind","agent:Iris","web-research"}, 3); when
// exactly one real account matches, the re-run line names it in the scope's place.
leash::v1::Refusal RefuseScope(const ScopeCheck& check, std::vector<std::string> words,
                               size_t scope_word, const std::vector<std::string>& acks);

struct BindJudgement {
  // Set when the bind must not happen; nothing else is meaningful then.
  std::optional<leash::v1::Refusal> refusal;
  // The binding to write: the scope, the profile, and the consent it needs (the given acks that
  // match a loosening, in loosening order). Given acks that match nothing are not recorded.
  Binding binding;
  // The consent the change itself took (change_consent.h: each subject resolved before and
  // after) that the binding's own acks do not carry: recorded in the consent ledger before the
  // write (a first bind's usually all lives on the binding; a rebind's drop of an old deny
  // never does).
  std::vector<std::string> change_acks;
  // Said out loud: bind global changes the floor for every subject; acks not needed; a binding
  // replaced; agents that would fail to resolve under a new global binding.
  std::vector<std::string> notices;
};

// Judges binding `profile_name` (whose fragment is `fragment`) to `scope` with `acks` (each
// "<field>:<value>"), against `current` (the floor and bindings as they are). Two judgements,
// one refusal: the fragment against the floor (what the binding's own acks cover) and each
// subject the bind reaches resolved before and after (a rebind drops what the old binding
// denied; `agent_accounts` adds the discovered agents a global bind reaches). Refuses: a
// malformed ack (kind "ack"); inert entries (kind "entry"); every unacknowledged loosening of
// either (kind "loosening", naming a binding it replaces, with the whole re-run line).
BindJudgement JudgeBind(const Resolver& current, const Scope& scope,
                        absl::string_view profile_name, const leash::v1::Config& fragment,
                        const std::vector<std::string>& acks,
                        const std::vector<std::string>& agent_accounts = {});

struct ProfileEditJudgement {
  std::optional<leash::v1::Refusal> refusal;
  // The bindings with the consent the edit carried appended to each agent's own binding.
  Bindings bindings;
  // Scopes whose binding gained consent (written first, before the profile).
  std::vector<std::string> gained;
  // The consent the change itself took that the binding does not carry, "agent:<account>=
  // <token>" each (each bound subject resolved before and after): recorded in the consent
  // ledger before the write.
  std::vector<std::string> change_acks;
  std::vector<std::string> notices;
};

// Judges saving `fragment` as profile `name` against every binding that names it, with the
// edit's per-agent consent `agent_acks` ("agent:<account>=<field>:<value>"; each appended to
// that agent's binding only). Refuses (kind "ack") consent for an agent not bound to `name`,
// or for the global binding; refuses (kind "loosening") an edit that loosens any bound subject
// beyond its own acks, naming each subject and token, and an edit that loosens what a bound
// subject resolves to (each resolved before and after: a deny the edit drops is its
// unset.deny), whose consent is given with the save and recorded in the ledger, not on the
// binding. A subject reached through the global binding is never consented for this way.
// `from_path` is the file the operator saved from, for the re-run line.
ProfileEditJudgement JudgeProfileEdit(const Resolver& current, absl::string_view name,
                                      const leash::v1::Config& fragment,
                                      const std::vector<std::string>& agent_acks,
                                      absl::string_view from_path,
                                      const std::vector<std::string>& agent_accounts = {});

struct UnbindJudgement {
  std::optional<leash::v1::Refusal> refusal;
  // The binding the unbind removes.
  Binding binding;
  // The consent the removal needed (all given): what the ledger records.
  std::vector<std::string> acks;
  std::vector<std::string> notices;
};

// Judges removing the binding of `scope_text` with `acks`. `floor` is the floor as loaded (or
// the error loading it); `agent_accounts` the discovered agents (the subjects a global unbind
// reaches). Refuses: no such binding (kind "scope"); a floor that cannot be read, or a subject
// that would still not resolve without the binding (kind "unjudgeable"); a malformed ack
// (kind "ack"); every unacknowledged loosening, including fail_closed:<profile> for a subject
// the binding holds fail-closed (kind "loosening").
UnbindJudgement JudgeUnbind(const absl::StatusOr<leash::v1::Config>& floor,
                            const Bindings& bindings, const ProfileLibrary& profiles,
                            absl::string_view scope_text,
                            const std::vector<std::string>& agent_accounts,
                            const std::vector<std::string>& acks);

// validate's findings for the tiers, `source` naming the binding ("global", "agent:<account>")
// or the profile ("profile:<name>"):
//  - a stale ack: consent to a loosening its profile does not perform (warning);
//  - a scope that resolves for nobody: team:, unparseable, an account not discovered (error);
//  - a binding whose subject does not resolve: dangling, unreadable, unacknowledged (critical);
//  - each profile's own ValidateConfig findings, and its ValidateProfileDenies against the
//    floor (a deny the floor already has: info).
std::vector<leash::v1::Finding> ValidateTiers(const leash::v1::Config& floor,
                                              const Bindings& bindings,
                                              const ProfileLibrary& profiles,
                                              const std::vector<std::string>& agent_accounts);

// validate's judgement of the policy leashd resolves: the floor's own findings (source
// "floor"), ValidateTiers, and each named list the floor or a profile uses (`lists`, read by the
// caller; nullptr: lists are not judged). leashd's Validate reports it, and every policy write is
// judged by it before and after (RefuseNewErrors): one judgement, so a write cannot land what
// validate then calls an error.
std::vector<leash::v1::Finding> ValidatePolicy(const leash::v1::Config& floor,
                                               const Bindings& bindings,
                                               const ProfileLibrary& profiles,
                                               const std::vector<std::string>& agent_accounts,
                                               const ListTexts* lists);

// The refusal (kind "validate") of the write `what` (e.g. "network mode blacklist") when
// `after` (validate's findings were it written) has an error or critical that `before` does not
// (NewBlockingFindings); nullopt when it adds none. It names each finding, and carries them.
std::optional<leash::v1::Refusal> RefuseNewErrors(absl::string_view what,
                                                  const std::vector<leash::v1::Finding>& before,
                                                  const std::vector<leash::v1::Finding>& after);

}  // namespace leash::engine
