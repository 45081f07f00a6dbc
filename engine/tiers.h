// The policy tiers: the floor (leash.yaml), a global binding folded into it, and an agent
// binding overlaid on that — "two tiers, global < agent". Pure: the control plane reads the
// files and hands the parsed contents in.
//
// API (for leashd's reconcile and run start, and the consent judgement):
//   Binding, Bindings         one scope -> profile + acks; the whole of bindings.yaml.
//   ProfileLibrary            profile name -> its parsed fragment, or the error loading it.
//   Overlay(base, fragment)   only the keys the fragment sets are applied: a deny list the
//                             fragment sets is added to the base's (never replaces it); an
//                             allow list or a scalar it sets is its own value.
//   Resolver                  built once per (floor, bindings, profiles); Resolve(account)
//                             returns a ResolvedSubject: the fully resolved policy
//                             (WithDefaults applied) or a typed failure for that subject alone.
//
// Each subject's policy is resolved on its own: the floor, then the global binding, then its own
// agent profile; a subject whose policy cannot be resolved (a dangling profile, an
// unacknowledged loosening) fails alone (docs/ARCHITECTURE.md, rule S3). The configured user
// resolves to the floor with no tier of its own, and that floor is the one the host runs, with
// the global binding folded in, since `bind global` changes the floor for every subject (rule S5).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "engine/loosening.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

struct Binding {
  // "global" or "agent:<account>" as stored (a scope that no longer parses — a legacy team:
  // binding — is kept so validate can report it; it resolves for nobody).
  std::string scope;
  std::string profile;
  // Consent tokens, "<field>:<value>", in the order they were given.
  std::vector<std::string> acks;
  bool operator==(const Binding& other) const {
    return scope == other.scope && profile == other.profile && acks == other.acks;
  }
};

// bindings.yaml: at most one binding per scope, kept sorted by scope.
class Bindings {
 public:
  Bindings() = default;
  explicit Bindings(std::vector<Binding> entries);

  const std::vector<Binding>& entries() const { return entries_; }
  const Binding* Find(absl::string_view scope) const;
  // Inserts or replaces the binding for `binding.scope`.
  void Put(Binding binding);
  // Removes the binding for `scope`; false when there was none.
  bool Remove(absl::string_view scope);
  // Every binding naming `profile`.
  std::vector<const Binding*> NamingProfile(absl::string_view profile) const;
  bool operator==(const Bindings& other) const { return entries_ == other.entries_; }

 private:
  std::vector<Binding> entries_;
};

// A profile absent from the map is deleted (a binding naming it dangles). A present entry
// holding an error is a profile file that exists but does not load.
using ProfileLibrary = absl::flat_hash_map<std::string, absl::StatusOr<leash::v1::Config>>;

// `base` with every key `fragment` sets applied. A deny list (network, filesystem, commands,
// tools) is the union of the base's and the fragment's, base entries first: "a profile may
// tighten the floor freely", and nothing a tier writes removes a deny beneath it (`deny: []`
// removes nothing). Every other key is the fragment's own value when it writes it: an allow
// list or dns_resolvers replaces the base's; each inspection category the fragment sets
// replaces that category only. `user` is the floor's and never taken from a fragment.
leash::v1::Config Overlay(const leash::v1::Config& base, const leash::v1::Config& fragment);

// Why a subject has no policy. The control plane acts on it: no policy, so the subject's
// listener refuses every connection and every filesystem and exec event it raises is denied.
struct ResolveFailure {
  enum class Kind {
    // The binding names a profile that does not exist (deleted).
    kDanglingProfile,
    // The profile file exists but does not load.
    kUnreadableProfile,
    // The profile loosens the base beyond the binding's acks.
    kUnacknowledgedLoosening,
  };
  Kind kind = Kind::kDanglingProfile;
  // The binding that failed: "global" (every subject fails with it) or "agent:<account>".
  std::string scope;
  std::string profile;
  // One paragraph in the engine's words, naming the scope, the profile and the fix.
  std::string message;
  // kUnacknowledgedLoosening: every unacknowledged loosening, each with its token.
  std::vector<FieldChange> loosenings;
};

// "dangling-profile", "unreadable-profile", "unacknowledged-loosening".
absl::string_view ResolveFailureKindName(ResolveFailure::Kind kind);

struct ResolvedSubject {
  std::string account;
  // Set when resolved: every field present (WithDefaults applied).
  std::optional<leash::v1::Config> policy;
  // Set when not resolved.
  std::optional<ResolveFailure> failure;
  // The bindings applied, in tier order ("global", then "agent:<account>").
  std::vector<std::string> scopes;
  // The profiles applied, in the same order.
  std::vector<std::string> profiles;
  // Rule L4, set with `policy` when a surface of it is audited by a tier that has a tier above
  // it: for each such surface (and only those), the policy written above that tier — what the
  // enforcers keep enforcing under audit. Its other fields are `policy`'s. See AuditAbove.
  std::optional<leash::v1::Config> audit_above;
  bool ok() const { return policy.has_value(); }
};

// Resolves subjects against one snapshot of the floor, the bindings and the profiles. The
// global binding is judged and folded once at construction; each profile is overlaid on the
// folded base and judged once, on first use, however many agents are bound to it. Holds
// pointers to `bindings` and `profiles`: both must outlive the Resolver. Const methods are
// thread-safe.
class Resolver {
 public:
  Resolver(const leash::v1::Config& floor, const Bindings& bindings,
           const ProfileLibrary& profiles);

  // An agent account: the global-folded floor, then its own agent:<account> binding's profile,
  // judged against that folded base with the binding's own acks.
  ResolvedSubject ResolveAgent(absl::string_view account) const;
  // The configured single user: the global-folded floor, no tier of its own.
  ResolvedSubject ResolveConfiguredUser() const;
  // ResolveConfiguredUser() when `account` is the floor's `user`, else ResolveAgent(account).
  ResolvedSubject Resolve(absl::string_view account) const;

  // The floor with defaults, before the global binding (the baseline of every consent check).
  const leash::v1::Config& floor() const { return floor_; }
  // The global-folded floor; nullptr when the global binding does not resolve.
  const leash::v1::Config* folded() const { return folded_ ? &*folded_ : nullptr; }
  const std::optional<ResolveFailure>& global_failure() const { return global_failure_; }
  const Bindings& bindings() const { return *bindings_; }
  const ProfileLibrary& profiles() const { return *profiles_; }

 private:
  // The fragment `binding` names; nullptr with `failure` set when it dangles or is unreadable.
  const leash::v1::Config* BoundProfile(const Binding& binding,
                                        std::optional<ResolveFailure>& failure) const;
  // A fragment overlaid on some base, and every loosening that performs.
  struct Applied {
    leash::v1::Config policy;
    std::vector<FieldChange> loosenings;
  };
  // `fragment` overlaid on the folded base; computed once per profile (every agent bound to
  // the same profile shares it — only the acks differ).
  const Applied& AppliedOnFolded(const std::string& profile,
                                 const leash::v1::Config& fragment) const;
  // The policy of `applied` if `binding`'s acks cover every loosening; else sets `failure`.
  std::optional<leash::v1::Config> Consented(const Applied& applied, const Binding& binding,
                                             std::optional<ResolveFailure>& failure) const;

  leash::v1::Config floor_;
  const Bindings* bindings_;
  const ProfileLibrary* profiles_;
  std::optional<leash::v1::Config> folded_;
  std::optional<ResolveFailure> global_failure_;
  mutable absl::Mutex mu_;
  mutable absl::node_hash_map<std::string, Applied> applied_ ABSL_GUARDED_BY(mu_);
};

// One tier above the floor as it was applied: the fragment it wrote and the policy it was
// overlaid on (the floor for the global binding, the folded floor for an agent profile).
struct AppliedTier {
  const leash::v1::Config* fragment = nullptr;
  const leash::v1::Config* base = nullptr;
};

// Rule L4, "audit never lifts a deny written above it": for each surface `policy` audits, the
// tier that set its audit is the last of `tiers` (in overlay order) whose fragment writes that
// surface's `audit`, or the floor when none does. A surface audited by a tier above the floor
// gets that tier's base surface in the result, reduced to what it writes as a block: its deny
// entries (and tools' inspection), as a blacklist with no allow list — a whitelist's
// default-deny is not a deny written above, and audit lifts a miss of it. A surface audited by
// the floor, or not audited, is left out (nothing is written above it). nullopt when no
// surface is set. The rest of the result is `policy`'s (fail_mode, enforcers).
std::optional<leash::v1::Config> AuditAbove(const leash::v1::Config& policy,
                                            const std::vector<AppliedTier>& tiers);

// The loosenings `acks` does not cover, in `loosenings` order (acks are matched exactly).
std::vector<FieldChange> Unacknowledged(const std::vector<FieldChange>& loosenings,
                                        const std::vector<std::string>& acks);

}  // namespace leash::engine
