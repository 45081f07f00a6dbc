#include "engine/tiers.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/config_defaults.h"
#include "engine/refusal.h"
#include "engine/scope.h"

namespace leash::engine {
namespace {

using leash::v1::Config;

// Appends to `base` every entry of `more` it lacks, in `more`'s order.
void UniteInto(const leash::v1::EntryList& more, leash::v1::EntryList& base) {
  absl::flat_hash_set<std::string> have(base.entries().begin(), base.entries().end());
  for (const std::string& entry : more.entries()) {
    if (have.insert(entry).second) base.add_entries(entry);
  }
}

// The mode and the allow list are the writing tier's own value; the deny list is the union of
// every tier's. "A profile may tighten the floor freely": a tier adds denies, and nothing a tier
// writes removes one the tiers beneath it hold, so a floor deny holds for every subject.
template <typename Surface>
void OverlaySurface(const Surface& fragment, Surface& out) {
  if (fragment.has_mode()) out.set_mode(fragment.mode());
  if (fragment.has_audit()) out.set_audit(fragment.audit());
  if (fragment.has_allow()) *out.mutable_allow() = fragment.allow();
  if (fragment.has_deny()) UniteInto(fragment.deny(), *out.mutable_deny());
}

std::string FixForScope(absl::string_view scope, absl::string_view profile) {
  return absl::StrCat("save profile '", profile, "' again, bind ", scope,
                      " to another profile, or remove the binding: ",
                      RenderCommand({"sudo", "leash", "unbind", std::string(scope)},
                                    {absl::StrCat("fail_closed:", profile)}));
}

std::string WhoFails(absl::string_view scope) {
  return scope == "global" ? "every subject on the host is denied everything"
                           : absl::StrCat(scope, " is denied everything");
}

// What audit keeps of a surface written above the tier that set it: its deny entries (and,
// on tools, what its inspection blocks), judged as a blacklist. A whitelist's default-deny is
// no written deny: audit lifts a miss of it, whichever tier wrote the whitelist.
template <typename Surface>
void KeepOnlyWrittenDenies(Surface& surface) {
  surface.set_mode(leash::v1::MODE_BLACKLIST);
  surface.mutable_allow()->clear_entries();
  surface.clear_audit();
}

}  // namespace

Bindings::Bindings(std::vector<Binding> entries) {
  for (Binding& binding : entries) Put(std::move(binding));
}

const Binding* Bindings::Find(absl::string_view scope) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), scope,
                             [](const Binding& b, absl::string_view s) { return b.scope < s; });
  return it != entries_.end() && it->scope == scope ? &*it : nullptr;
}

void Bindings::Put(Binding binding) {
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), binding.scope,
      [](const Binding& b, const std::string& s) { return b.scope < s; });
  if (it != entries_.end() && it->scope == binding.scope) {
    *it = std::move(binding);
  } else {
    entries_.insert(it, std::move(binding));
  }
}

bool Bindings::Remove(absl::string_view scope) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), scope,
                             [](const Binding& b, absl::string_view s) { return b.scope < s; });
  if (it == entries_.end() || it->scope != scope) return false;
  entries_.erase(it);
  return true;
}

std::vector<const Binding*> Bindings::NamingProfile(absl::string_view profile) const {
  std::vector<const Binding*> out;
  for (const Binding& binding : entries_) {
    if (binding.profile == profile) out.push_back(&binding);
  }
  return out;
}

Config Overlay(const Config& base, const Config& fragment) {
  Config out = base;
  if (fragment.has_fail_mode()) out.set_fail_mode(fragment.fail_mode());
  if (fragment.has_network()) {
    const leash::v1::NetworkPolicy& f = fragment.network();
    leash::v1::NetworkPolicy& n = *out.mutable_network();
    OverlaySurface(f, n);
    if (f.has_udp()) n.set_udp(f.udp());
    if (f.has_inbound()) n.set_inbound(f.inbound());
    if (f.has_dns()) n.set_dns(f.dns());
    if (f.has_dns_resolvers()) *n.mutable_dns_resolvers() = f.dns_resolvers();
  }
  if (fragment.has_filesystem()) OverlaySurface(fragment.filesystem(), *out.mutable_filesystem());
  if (fragment.has_commands()) OverlaySurface(fragment.commands(), *out.mutable_commands());
  if (fragment.has_tools()) {
    const leash::v1::ToolsPolicy& f = fragment.tools();
    leash::v1::ToolsPolicy& t = *out.mutable_tools();
    OverlaySurface(f, t);
    for (const auto& [category, action] : f.inspect()) (*t.mutable_inspect())[category] = action;
    if (f.has_max_input_bytes()) t.set_max_input_bytes(f.max_input_bytes());
  }
  if (fragment.has_logging()) {
    const leash::v1::LoggingPolicy& f = fragment.logging();
    if (f.has_level()) out.mutable_logging()->set_level(f.level());
    if (f.has_decisions()) out.mutable_logging()->set_decisions(f.decisions());
  }
  if (fragment.has_enforcers()) {
    const leash::v1::Enforcers& f = fragment.enforcers();
    leash::v1::Enforcers& e = *out.mutable_enforcers();
    if (f.has_network()) e.set_network(f.network());
    if (f.has_filesystem()) e.set_filesystem(f.filesystem());
    if (f.has_tools()) e.set_tools(f.tools());
  }
  return out;
}

std::optional<Config> AuditAbove(const Config& policy, const std::vector<AppliedTier>& tiers) {
  // The base that the tier setting a surface's audit was overlaid on, or nullptr (the floor).
  auto above = [&](auto has_surface, auto surface_of) -> const Config* {
    const Config* base = nullptr;
    for (const AppliedTier& tier : tiers) {
      if (has_surface(*tier.fragment) && surface_of(*tier.fragment).has_audit()) base = tier.base;
    }
    return base;
  };
  Config out = policy;
  out.clear_network();
  out.clear_filesystem();
  out.clear_commands();
  out.clear_tools();
  bool any = false;
  if (policy.network().audit()) {
    if (const Config* base = above([](const Config& c) { return c.has_network(); },
                                   [](const Config& c) -> const auto& { return c.network(); })) {
      *out.mutable_network() = base->network();
      KeepOnlyWrittenDenies(*out.mutable_network());
      any = true;
    }
  }
  if (policy.filesystem().audit()) {
    if (const Config* base = above([](const Config& c) { return c.has_filesystem(); },
                                   [](const Config& c) -> const auto& { return c.filesystem(); })) {
      *out.mutable_filesystem() = base->filesystem();
      KeepOnlyWrittenDenies(*out.mutable_filesystem());
      any = true;
    }
  }
  if (policy.commands().audit()) {
    if (const Config* base = above([](const Config& c) { return c.has_commands(); },
                                   [](const Config& c) -> const auto& { return c.commands(); })) {
      *out.mutable_commands() = base->commands();
      KeepOnlyWrittenDenies(*out.mutable_commands());
      any = true;
    }
  }
  if (policy.tools().audit()) {
    if (const Config* base = above([](const Config& c) { return c.has_tools(); },
                                   [](const Config& c) -> const auto& { return c.tools(); })) {
      *out.mutable_tools() = base->tools();
      KeepOnlyWrittenDenies(*out.mutable_tools());
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return out;
}

absl::string_view ResolveFailureKindName(ResolveFailure::Kind kind) {
  switch (kind) {
    case ResolveFailure::Kind::kDanglingProfile:
      return "dangling-profile";
    case ResolveFailure::Kind::kUnreadableProfile:
      return "unreadable-profile";
    default:
      return "unacknowledged-loosening";
  }
}

std::vector<FieldChange> Unacknowledged(const std::vector<FieldChange>& loosenings,
                                        const std::vector<std::string>& acks) {
  const absl::flat_hash_set<absl::string_view> given(acks.begin(), acks.end());
  std::vector<FieldChange> out;
  for (const FieldChange& change : loosenings) {
    if (!given.contains(change.ack_token)) out.push_back(change);
  }
  return out;
}

Resolver::Resolver(const Config& floor, const Bindings& bindings, const ProfileLibrary& profiles)
    : floor_(WithDefaults(floor)), bindings_(&bindings), profiles_(&profiles) {
  const Binding* global = bindings.Find("global");
  if (global == nullptr) {
    folded_ = floor_;
    return;
  }
  // The gate: "the fragment is judged as an overlay against the unfolded floor first".
  const Config* fragment = BoundProfile(*global, global_failure_);
  if (fragment == nullptr) return;
  Applied applied{Overlay(floor_, *fragment), {}};
  applied.loosenings = Loosenings(floor_, applied.policy);
  folded_ = Consented(applied, *global, global_failure_);
}

const Config* Resolver::BoundProfile(const Binding& binding,
                                     std::optional<ResolveFailure>& failure) const {
  auto it = profiles_->find(binding.profile);
  if (it == profiles_->end()) {
    failure = ResolveFailure{
        ResolveFailure::Kind::kDanglingProfile, binding.scope, binding.profile,
        absl::StrCat(binding.scope, " is bound to profile '", binding.profile,
                     "', which does not exist (deleted): ", WhoFails(binding.scope), " until ",
                     FixForScope(binding.scope, binding.profile)),
        {}};
    return nullptr;
  }
  if (!it->second.ok()) {
    failure = ResolveFailure{
        ResolveFailure::Kind::kUnreadableProfile, binding.scope, binding.profile,
        absl::StrCat(binding.scope, " is bound to profile '", binding.profile,
                     "', which does not load (", it->second.status().message(),
                     "): ", WhoFails(binding.scope), " until ",
                     FixForScope(binding.scope, binding.profile)),
        {}};
    return nullptr;
  }
  return &*it->second;
}

const Resolver::Applied& Resolver::AppliedOnFolded(const std::string& profile,
                                                   const Config& fragment) const {
  absl::MutexLock lock(&mu_);
  auto it = applied_.find(profile);
  if (it == applied_.end()) {
    Config overlaid = Overlay(*folded_, fragment);
    std::vector<FieldChange> loosenings = Loosenings(*folded_, overlaid);
    it = applied_.emplace(profile, Applied{std::move(overlaid), std::move(loosenings)}).first;
  }
  // node_hash_map: the element stays where it is while others are added.
  return it->second;
}

std::optional<Config> Resolver::Consented(const Applied& applied, const Binding& binding,
                                          std::optional<ResolveFailure>& failure) const {
  std::vector<FieldChange> missing = Unacknowledged(applied.loosenings, binding.acks);
  if (missing.empty()) return applied.policy;

  std::vector<std::string> tokens;
  for (const FieldChange& change : missing) tokens.push_back(change.ack_token);
  std::vector<std::string> rerun_acks = binding.acks;
  rerun_acks.insert(rerun_acks.end(), tokens.begin(), tokens.end());
  failure = ResolveFailure{
      ResolveFailure::Kind::kUnacknowledgedLoosening, binding.scope, binding.profile,
      absl::StrCat("profile '", binding.profile, "' bound to ", binding.scope, " loosens ",
                   binding.scope == "global" ? "the floor" : "its base (the floor as folded)",
                   " in ", missing.size(), missing.size() == 1 ? " way" : " ways",
                   " the binding has not acknowledged (", absl::StrJoin(tokens, ", "), "): ",
                   WhoFails(binding.scope), "; re-bind with consent: ",
                   RenderCommand({"sudo", "leash", "bind", binding.scope, binding.profile},
                                 rerun_acks)),
      std::move(missing)};
  return std::nullopt;
}

ResolvedSubject Resolver::ResolveConfiguredUser() const {
  ResolvedSubject subject;
  subject.account = floor_.user();
  if (global_failure_) {
    subject.failure = global_failure_;
    return subject;
  }
  std::vector<AppliedTier> tiers;
  if (const Binding* global = bindings_->Find("global")) {
    subject.scopes.push_back(global->scope);
    subject.profiles.push_back(global->profile);
    std::optional<ResolveFailure> unused;
    if (const Config* fragment = BoundProfile(*global, unused)) tiers.push_back({fragment, &floor_});
  }
  subject.policy = folded_;
  subject.audit_above = AuditAbove(*subject.policy, tiers);
  return subject;
}

ResolvedSubject Resolver::ResolveAgent(absl::string_view account) const {
  const Binding* binding = bindings_->Find(Scope::Agent(std::string(account)).ToString());
  if (binding == nullptr || global_failure_) {
    ResolvedSubject subject = ResolveConfiguredUser();
    subject.account = std::string(account);
    return subject;
  }
  ResolvedSubject subject;
  subject.account = std::string(account);
  if (const Binding* global = bindings_->Find("global")) {
    subject.scopes.push_back(global->scope);
    subject.profiles.push_back(global->profile);
  }
  subject.scopes.push_back(binding->scope);
  subject.profiles.push_back(binding->profile);
  const Config* fragment = BoundProfile(*binding, subject.failure);
  if (fragment == nullptr) return subject;
  // "caught by the resolver at run start, against the real base, with the same token".
  subject.policy = Consented(AppliedOnFolded(binding->profile, *fragment), *binding,
                             subject.failure);
  if (subject.policy) {
    std::vector<AppliedTier> tiers;
    if (const Binding* global = bindings_->Find("global")) {
      std::optional<ResolveFailure> unused;
      if (const Config* g = BoundProfile(*global, unused)) tiers.push_back({g, &floor_});
    }
    tiers.push_back({fragment, &*folded_});
    subject.audit_above = AuditAbove(*subject.policy, tiers);
  }
  return subject;
}

ResolvedSubject Resolver::Resolve(absl::string_view account) const {
  if (floor_.has_user() && account == floor_.user()) return ResolveConfiguredUser();
  return ResolveAgent(account);
}

}  // namespace leash::engine
