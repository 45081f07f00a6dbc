#include "engine/consent.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/change_consent.h"
#include "engine/inert_entries.h"
#include "engine/refusal.h"
#include "engine/validate.h"

namespace leash::engine {
namespace {

using leash::v1::Config;
using leash::v1::Finding;
using leash::v1::Refusal;

std::string Ways(size_t n) { return n == 1 ? "1 way" : absl::StrCat(n, " ways"); }

// Appends the loosenings of `more` whose token `into` lacks.
void MergeByToken(std::vector<FieldChange>& into, std::vector<FieldChange> more) {
  absl::flat_hash_set<std::string> have;
  for (const FieldChange& change : into) have.insert(change.ack_token);
  for (FieldChange& change : more) {
    if (have.insert(change.ack_token).second) into.push_back(std::move(change));
  }
}

std::vector<std::string> Tokens(const std::vector<FieldChange>& changes) {
  std::vector<std::string> out;
  for (const FieldChange& change : changes) out.push_back(change.ack_token);
  return out;
}

// Parses plain "<field>:<value>" acks; on the first malformed one, its "ack" refusal.
std::optional<Refusal> CheckAcks(const std::vector<std::string>& acks) {
  for (const std::string& ack : acks) {
    absl::StatusOr<AckToken> token = ParseAckToken(ack);
    if (!token.ok()) return MakeRefusal(kRefusalAck, std::string(token.status().message()));
  }
  return std::nullopt;
}

Finding MakeFinding(leash::v1::Severity severity, std::string source, std::string field,
                    std::string entry, std::string message) {
  Finding finding;
  finding.set_severity(severity);
  finding.set_source(std::move(source));
  finding.set_field(std::move(field));
  finding.set_entry(std::move(entry));
  finding.set_message(std::move(message));
  return finding;
}

}  // namespace

std::vector<FieldChange> BindingLoosenings(const Resolver& current, const Scope& scope,
                                           const Config& fragment) {
  std::vector<FieldChange> out = Loosenings(current.floor(), Overlay(current.floor(), fragment));
  if (!scope.is_global() && current.folded() != nullptr) {
    const Config& folded = *current.folded();
    MergeByToken(out, Loosenings(folded, Overlay(folded, fragment)));
  }
  return out;
}

std::optional<Refusal> RefuseInertEntries(absl::string_view what, const Config& fragment) {
  std::vector<leash::v1::InertEntry> inert = InertEntries(fragment);
  if (inert.empty()) return std::nullopt;
  Refusal refusal = MakeRefusal(
      kRefusalEntry,
      absl::StrCat(what, " carries ", inert.size(),
                   inert.size() == 1 ? " entry that can" : " entries that can",
                   " never match; fix or remove ", inert.size() == 1 ? "it" : "them",
                   " and write again (an inert deny blocks nothing; an inert allow allows "
                   "nothing)"));
  for (leash::v1::InertEntry& entry : inert) *refusal.add_inert_entries() = std::move(entry);
  return refusal;
}

Refusal RefuseScope(const ScopeCheck& check, std::vector<std::string> words, size_t scope_word,
                    const std::vector<std::string>& acks) {
  Refusal refusal = MakeRefusal(kRefusalScope, std::string(check.status.message()));
  if (check.candidates.size() == 1 && scope_word < words.size()) {
    words[scope_word] = Scope::Agent(check.candidates.front()).ToString();
    refusal.set_rerun(RenderCommand(words, acks));
  }
  return refusal;
}

BindJudgement JudgeBind(const Resolver& current, const Scope& scope,
                        absl::string_view profile_name, const Config& fragment,
                        const std::vector<std::string>& acks,
                        const std::vector<std::string>& agent_accounts) {
  BindJudgement judgement;
  const std::string scope_text = scope.ToString();
  if ((judgement.refusal = CheckAcks(acks))) return judgement;
  // No re-run line: the same bind would be refused again; the profile is what needs fixing.
  if ((judgement.refusal =
           RefuseInertEntries(absl::StrCat("profile '", profile_name, "'"), fragment))) {
    return judgement;
  }
  const Binding* old = current.bindings().Find(scope_text);
  // Said before anything is written: in the refusal, and in what a written bind reports.
  const std::string replaces =
      old == nullptr ? std::string()
                     : absl::StrCat("replaces ", scope_text, "'s binding to '", old->profile, "'");

  // What the binding's own acks cover: the fragment judged against the floor (and the base).
  const std::vector<FieldChange> loosenings = BindingLoosenings(current, scope, fragment);
  // What the write changes for each subject it reaches, resolved before and after as if the
  // binding carried its consent: a rebind is an unbind plus a bind.
  Binding next{scope_text, std::string(profile_name), Tokens(loosenings)};
  Bindings after_bindings = current.bindings();
  after_bindings.Put(next);
  ProfileLibrary after_profiles = current.profiles();
  after_profiles.insert_or_assign(std::string(profile_name), fragment);
  const Resolver after(current.floor(), after_bindings, after_profiles);
  Reached reached;
  if (scope.is_global()) {
    reached.agents = ReachedAgents(agent_accounts, current.bindings(), after_bindings);
    reached.configured_user = true;
  } else {
    reached.agents = {scope.account};
  }
  const ResolvedChange change = JudgeResolvedChange(current, after, reached);
  const std::vector<FieldChange> change_loosenings = change.ByToken();
  std::vector<FieldChange> all = loosenings;
  MergeByToken(all, change_loosenings);

  const std::vector<FieldChange> missing = Unacknowledged(all, acks);
  if (!missing.empty()) {
    const std::string what = absl::StrCat(
        "binding profile '", profile_name, "'", scope.is_global() ? " globally" : " to ",
        scope.is_global() ? "" : scope_text,
        replaces.empty() ? "" : absl::StrCat(" (it ", replaces, ")"));
    Refusal refusal = MakeRefusal(
        kRefusalLoosening,
        scope.is_global()
            ? absl::StrCat(what, " loosens the floor for every subject on the host in ",
                           Ways(missing.size()), " without consent; each needs its own --ack")
            : absl::StrCat(what, " loosens its policy in ", Ways(missing.size()),
                           " without consent; each needs its own --ack"));
    for (const FieldChange& change : missing) AddLoosening(refusal, scope_text, change);
    refusal.set_rerun(RenderCommand({"sudo", "leash", "bind", scope_text,
                                     std::string(profile_name)},
                                    Tokens(all)));
    judgement.refusal = std::move(refusal);
    return judgement;
  }

  judgement.binding = std::move(next);
  // What the binding's own acks carry is recorded there; the rest is consent to the change.
  for (const std::string& token : Tokens(change_loosenings)) {
    if (std::find(judgement.binding.acks.begin(), judgement.binding.acks.end(), token) ==
        judgement.binding.acks.end()) {
      judgement.change_acks.push_back(token);
    }
  }
  const std::vector<std::string> needed_tokens = Tokens(all);
  const absl::flat_hash_set<std::string> needed(needed_tokens.begin(), needed_tokens.end());
  for (const std::string& ack : acks) {
    if (!needed.contains(ack)) {
      judgement.notices.push_back(absl::StrCat(
          "--ack '", ack, "' is not needed: binding '", profile_name, "' to ", scope_text,
          " performs no such loosening, so it is not recorded"));
    }
  }
  if (!replaces.empty()) judgement.notices.push_back(replaces);
  if (scope.is_global()) {
    judgement.notices.push_back(
        "bind global changes the floor for every subject on the host");
  }
  for (const std::string& notice : change.notices) judgement.notices.push_back(notice);
  return judgement;
}

ProfileEditJudgement JudgeProfileEdit(const Resolver& current, absl::string_view name,
                                      const Config& fragment,
                                      const std::vector<std::string>& agent_acks,
                                      absl::string_view from_path,
                                      const std::vector<std::string>& agent_accounts) {
  ProfileEditJudgement judgement;
  judgement.bindings = current.bindings();
  const std::string profile(name);

  // Each --ack names the agent it is for; its token goes to that agent's binding only.
  absl::flat_hash_map<std::string, std::vector<std::string>> given;  // scope -> tokens
  for (const std::string& text : agent_acks) {
    absl::StatusOr<AgentAck> ack = ParseAgentAck(text);
    if (!ack.ok()) {
      judgement.refusal = MakeRefusal(kRefusalAck, std::string(ack.status().message()));
      return judgement;
    }
    const std::string scope = Scope::Agent(ack->account).ToString();
    const Binding* binding = current.bindings().Find(scope);
    if (binding == nullptr || binding->profile != name) {
      judgement.refusal = MakeRefusal(
          kRefusalAck,
          absl::StrCat("ack '", text, "': ", scope, " is not bound to profile '", name,
                       "', so there is no binding for its consent to live on; bind it with "
                       "sudo leash bind ",
                       scope, " ", ShellQuote(name), " (with its own --ack tokens)"));
      return judgement;
    }
    given[scope].push_back(ack->token);
  }

  // The edit resolved for every subject it reaches, before and after, as if each binding
  // naming the profile carried the consent the floor check asks of it.
  Bindings after_bindings = current.bindings();
  ProfileLibrary after_profiles = current.profiles();
  after_profiles.insert_or_assign(profile, fragment);
  Reached reached;
  bool global_bound = false;
  std::optional<std::vector<FieldChange>> for_global;
  std::optional<std::vector<FieldChange>> for_agents;
  // Each binding naming the profile, with what the floor check asks of it.
  std::vector<std::pair<const Binding*, const std::vector<FieldChange>*>> named;
  for (const Binding* binding : current.bindings().NamingProfile(name)) {
    absl::StatusOr<Scope> scope = ParseScope(binding->scope);
    if (!scope.ok()) {
      judgement.notices.push_back(absl::StrCat("binding '", binding->scope, "' names profile '",
                                               name, "' but resolves for nobody: ",
                                               scope.status().message()));
      continue;
    }
    // Every agent bound to the profile is judged against the same bases: compute it once.
    std::optional<std::vector<FieldChange>>& cached = scope->is_global() ? for_global : for_agents;
    if (!cached) cached = BindingLoosenings(current, *scope, fragment);
    named.emplace_back(binding, &*cached);
    Binding consented = *binding;
    for (const std::string& token : Tokens(*cached)) {
      if (std::find(consented.acks.begin(), consented.acks.end(), token) ==
          consented.acks.end()) {
        consented.acks.push_back(token);
      }
    }
    after_bindings.Put(std::move(consented));
    if (scope->is_global()) {
      global_bound = true;
    } else {
      reached.agents.push_back(scope->account);
    }
  }
  if (global_bound) {
    reached.agents = ReachedAgents(agent_accounts, current.bindings(), after_bindings);
    reached.configured_user = true;
  }
  const Resolver after(current.floor(), after_bindings, after_profiles);
  const ResolvedChange change = JudgeResolvedChange(current, after, reached);
  for (const std::string& notice : change.notices) judgement.notices.push_back(notice);

  Refusal refusal = MakeRefusal(kRefusalLoosening, "");
  std::vector<std::string> rerun_acks;
  std::vector<std::string> loosened_scopes;
  bool global_loosened = false;
  absl::flat_hash_set<std::string> own_subjects;  // agents whose own binding names the profile
  for (const auto& [binding, loosenings] : named) {
    const bool is_global = binding->scope == "global";
    if (!is_global) own_subjects.insert(binding->scope);
    const std::vector<std::string> tokens = Tokens(*loosenings);
    const absl::flat_hash_set<std::string> performed(tokens.begin(), tokens.end());
    // What the change itself asks of this agent: consent given with this save only.
    const std::vector<FieldChange> changed =
        is_global ? std::vector<FieldChange>() : change.For(binding->scope);
    std::vector<std::string> changed_tokens = Tokens(changed);
    const absl::flat_hash_set<std::string> for_change(changed_tokens.begin(),
                                                      changed_tokens.end());
    std::vector<std::string> acks = binding->acks;
    bool gained = false;
    for (const std::string& token : given[binding->scope]) {
      if (!performed.contains(token) && !for_change.contains(token)) {
        judgement.notices.push_back(absl::StrCat(
            "--ack '", binding->scope, "=", token, "' is not needed: the edit performs no such "
            "loosening for ", binding->scope, ", so it is not recorded"));
      } else if (performed.contains(token) &&
                 std::find(acks.begin(), acks.end(), token) == acks.end()) {
        acks.push_back(token);
        gained = true;
      }
    }
    std::vector<FieldChange> missing = Unacknowledged(*loosenings, acks);
    {
      absl::flat_hash_set<std::string> listed;
      for (const FieldChange& c : missing) listed.insert(c.ack_token);
      for (const FieldChange& c : Unacknowledged(changed, given[binding->scope])) {
        if (listed.insert(c.ack_token).second) missing.push_back(c);
      }
    }
    for (FieldChange change : missing) {
      // The token as a profile save takes it: 'agent:<account>=<token>'. A global binding's
      // consent is never taken by a save (the message says how), so it gets no --ack line.
      change.ack_token =
          is_global ? "" : absl::StrCat(binding->scope, "=", change.ack_token);
      AddLoosening(refusal, binding->scope, change);
    }
    if (!missing.empty()) {
      loosened_scopes.push_back(absl::StrCat(binding->scope, " (", Ways(missing.size()), ")"));
      global_loosened |= is_global;
    }
    if (!is_global) {
      std::vector<FieldChange> all = *loosenings;
      MergeByToken(all, changed);
      for (const FieldChange& change : all) {
        rerun_acks.push_back(absl::StrCat(binding->scope, "=", change.ack_token));
      }
      // What the binding's own acks carry is recorded there; the rest is consent to the
      // change, for the ledger.
      for (const std::string& token : changed_tokens) {
        if (std::find(acks.begin(), acks.end(), token) == acks.end()) {
          judgement.change_acks.push_back(absl::StrCat(binding->scope, "=", token));
        }
      }
    }
    for (const std::string& ack : acks) {
      if (!performed.contains(ack)) {
        judgement.notices.push_back(absl::StrCat(
            binding->scope, "'s ack '", ack, "' is stale after this edit: profile '", name,
            "' no longer performs it (leash validate reports it)"));
      }
    }
    if (gained) {
      Binding updated = *binding;
      updated.acks = std::move(acks);
      judgement.bindings.Put(std::move(updated));
      judgement.gained.push_back(binding->scope);
    }
  }
  // Subjects the edit reaches through the global binding and not through a binding of their
  // own: their consent is the global binding's, which a save never takes.
  // Each such loosening is listed once, and not again when the global binding's own line
  // already names the same change.
  absl::flat_hash_set<std::string> listed_for_global;
  for (const leash::v1::Loosening& listed : refusal.loosenings()) {
    if (listed.scope() == "global") {
      listed_for_global.insert(absl::StrCat(listed.field(), "\n", listed.value()));
    }
  }
  std::vector<std::string> through_global;
  for (const SubjectLoosening& loosening : change.loosenings) {
    if (own_subjects.contains(loosening.subject)) continue;
    if (!listed_for_global
             .insert(absl::StrCat(loosening.change.field, "\n", loosening.change.value))
             .second) {
      continue;
    }
    if (std::find(through_global.begin(), through_global.end(), loosening.subject) ==
        through_global.end()) {
      through_global.push_back(loosening.subject);
    }
    FieldChange shown = loosening.change;
    shown.ack_token = "";
    AddLoosening(refusal, loosening.subject, shown);
  }
  for (const std::string& subject : through_global) {
    loosened_scopes.push_back(absl::StrCat(subject, " (through the global binding)"));
    global_loosened = true;
  }

  if (refusal.loosenings_size() > 0) {
    std::string message = absl::StrCat(
        "saving profile '", name, "' would loosen ", loosened_scopes.size(),
        loosened_scopes.size() == 1 ? " bound subject" : " bound subjects",
        " beyond its own acks: ", absl::StrJoin(loosened_scopes, ", "),
        "; each agent's consent is an --ack 'agent:<account>=<token>' for that agent alone");
    if (global_loosened) {
      absl::StrAppend(&message,
                      ". Consent for the global binding is never taken by a profile save: save "
                      "the edit under a new name and bind it with sudo leash bind global "
                      "<new-name> and its --ack tokens");
    } else {
      refusal.set_rerun(RenderCommand(
          {"sudo", "leash", "profile", "save", profile, "--from",
           from_path.empty() ? absl::StrCat(name, ".yaml") : std::string(from_path)},
          rerun_acks));
    }
    refusal.set_message(std::move(message));
    judgement.refusal = std::move(refusal);
    judgement.gained.clear();
    judgement.change_acks.clear();
  }
  return judgement;
}

UnbindJudgement JudgeUnbind(const absl::StatusOr<Config>& floor, const Bindings& bindings,
                            const ProfileLibrary& profiles, absl::string_view scope_text,
                            const std::vector<std::string>& agent_accounts,
                            const std::vector<std::string>& acks) {
  UnbindJudgement judgement;
  const Binding* binding = bindings.Find(scope_text);
  absl::StatusOr<Scope> scope = ParseScope(scope_text);
  if (binding == nullptr) {
    judgement.refusal = MakeRefusal(
        kRefusalScope,
        scope.ok() ? absl::StrCat("there is no binding for ", scope_text,
                                  " (leash bindings lists them)")
                   : std::string(scope.status().message()));
    return judgement;
  }
  judgement.binding = *binding;
  const std::vector<std::string> words = {"sudo", "leash", "unbind", std::string(scope_text)};
  if (!floor.ok()) {
    judgement.refusal = MakeRefusal(
        kRefusalUnjudgeable,
        absl::StrCat("removing the binding of ", scope_text,
                     " cannot be judged because the floor cannot be read (",
                     floor.status().message(), "); fix the floor and run the unbind again"));
    judgement.refusal->set_rerun(RenderCommand(words, acks));
    return judgement;
  }
  if ((judgement.refusal = CheckAcks(acks))) return judgement;

  Bindings without = bindings;
  without.Remove(scope_text);
  const Resolver with_resolver(*floor, bindings, profiles);
  const Resolver without_resolver(*floor, without, profiles);

  // The subjects the binding reaches: its agent, or for global every subject on the host.
  std::vector<std::string> subjects;
  bool global_scope = false;
  if (scope.ok() && scope->is_global()) {
    global_scope = true;
    absl::flat_hash_set<std::string> seen;
    for (const std::string& account : agent_accounts) {
      if (seen.insert(account).second) subjects.push_back(account);
    }
    for (const Binding& b : bindings.entries()) {
      absl::StatusOr<Scope> s = ParseScope(b.scope);
      if (s.ok() && !s->is_global() && seen.insert(s->account).second) {
        subjects.push_back(s->account);
      }
    }
  } else if (scope.ok()) {
    subjects.push_back(scope->account);
  } else {
    judgement.notices.push_back(absl::StrCat("binding '", scope_text,
                                             "' resolves for nobody (", scope.status().message(),
                                             "), so removing it changes no subject"));
  }

  std::vector<FieldChange> loosenings;
  auto judge = [&](const ResolvedSubject& with, const ResolvedSubject& out,
                   const std::string& who) -> bool {
    if (!out.ok()) {
      if (with.ok() || !global_scope) return false;  // caller decides
      judgement.notices.push_back(absl::StrCat(
          who, " does not resolve with or without the binding, so removing it changes nothing "
               "for it: ",
          out.failure->message));
      return true;
    }
    if (!with.ok()) {
      MergeByToken(loosenings,
                   {FailClosedRemoval(scope_text, binding->profile,
                                      with.failure->kind ==
                                              ResolveFailure::Kind::kDanglingProfile
                                          ? absl::StrCat("its profile '", binding->profile,
                                                         "' is deleted")
                                          : absl::StrCat("its policy does not resolve: ",
                                                         ResolveFailureKindName(
                                                             with.failure->kind)))});
      return true;
    }
    MergeByToken(loosenings, Loosenings(*with.policy, *out.policy));
    return true;
  };

  if (global_scope) {
    judge(with_resolver.ResolveConfiguredUser(), without_resolver.ResolveConfiguredUser(),
          "the configured user");
  }
  for (const std::string& account : subjects) {
    const ResolvedSubject with = with_resolver.ResolveAgent(account);
    const ResolvedSubject out = without_resolver.ResolveAgent(account);
    const std::string who = absl::StrCat("agent:", account);
    if (!judge(with, out, who)) {
      if (global_scope) {
        // A global removal that leaves an agent unresolvable holds it closed: a tightening.
        judgement.notices.push_back(absl::StrCat(
            "after the removal ", who, " does not resolve and is denied everything: ",
            out.failure->message));
        continue;
      }
      // "an unbind Leash cannot judge — ... the subject still unresolvable without the
      // binding — is refused rather than waved through."
      judgement.refusal = MakeRefusal(
          kRefusalUnjudgeable,
          absl::StrCat("removing the binding of ", scope_text,
                       " cannot be judged: the subject would still not resolve without it (",
                       out.failure->message, ")"));
      return judgement;
    }
  }

  const std::vector<FieldChange> missing = Unacknowledged(loosenings, acks);
  if (!missing.empty()) {
    Refusal refusal = MakeRefusal(
        kRefusalLoosening,
        absl::StrCat("removing the binding of ", scope_text, " to '", binding->profile,
                     "' loosens ",
                     global_scope ? "the floor for every subject on the host"
                                     : std::string("the subject's policy"),
                     " in ", Ways(missing.size()),
                     " without consent; each needs its own --ack"));
    for (const FieldChange& change : missing) AddLoosening(refusal, scope_text, change);
    refusal.set_rerun(RenderCommand(words, Tokens(loosenings)));
    judgement.refusal = std::move(refusal);
    return judgement;
  }
  judgement.acks = Tokens(loosenings);
  const absl::flat_hash_set<std::string> needed(judgement.acks.begin(), judgement.acks.end());
  for (const std::string& ack : acks) {
    if (!needed.contains(ack)) {
      judgement.notices.push_back(absl::StrCat("--ack '", ack, "' is not needed: removing ",
                                               scope_text,
                                               " performs no such loosening, so it is not "
                                               "recorded"));
    }
  }
  if (global_scope) {
    judgement.notices.push_back("unbind global changes the floor for every subject on the host");
  }
  return judgement;
}

// Whether `findings` has one for `field`.
bool SaysField(const std::vector<Finding>& findings, absl::string_view field) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.field() == field; });
}

std::vector<Finding> ValidateTiers(const Config& floor, const Bindings& bindings,
                                   const ProfileLibrary& profiles,
                                   const std::vector<std::string>& agent_accounts) {
  std::vector<Finding> out;
  const Resolver resolver(floor, bindings, profiles);
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> performed_by;
  for (const Binding& binding : bindings.entries()) {
    absl::StatusOr<Scope> scope = ParseScope(binding.scope);
    if (!scope.ok()) {
      out.push_back(MakeFinding(leash::v1::SEVERITY_ERROR, binding.scope, "scope", binding.scope,
                                absl::StrCat(scope.status().message(),
                                             "; the binding resolves for nobody: remove it with "
                                             "sudo leash unbind ",
                                             ShellQuote(binding.scope))));
      continue;
    }
    if (!scope->is_global() && std::find(agent_accounts.begin(), agent_accounts.end(),
                                         scope->account) == agent_accounts.end()) {
      out.push_back(MakeFinding(
          leash::v1::SEVERITY_ERROR, binding.scope, "scope", binding.scope,
          absl::StrCat("no agent account '", scope->account,
                       "' is discovered, so the binding resolves for nobody")));
    }
    std::optional<ResolveFailure> failure;
    std::optional<Config> resolved;  // the policy the binding's subjects end up with
    if (scope->is_global()) {
      failure = resolver.global_failure();
      if (resolver.folded() != nullptr) resolved = *resolver.folded();
    } else if (resolver.global_failure() == std::nullopt) {
      ResolvedSubject subject = resolver.ResolveAgent(scope->account);
      failure = std::move(subject.failure);
      resolved = std::move(subject.policy);
    }
    if (failure && failure->scope == binding.scope) {
      out.push_back(MakeFinding(leash::v1::SEVERITY_CRITICAL, binding.scope,
                                std::string(ResolveFailureKindName(failure->kind)),
                                binding.profile, failure->message));
    }
    if (resolved) {
      // A mode and an allow list from different tiers (a profile that only switches a surface
      // to blacklist over the floor's allow list): neither file alone shows it.
      auto profile = profiles.find(binding.profile);
      for (Finding& finding : ValidateBlacklistAllow(*resolved, binding.scope)) {
        if (SaysField(ValidateBlacklistAllow(floor, ""), finding.field()) ||
            (profile != profiles.end() && profile->second.ok() &&
             SaysField(ValidateBlacklistAllow(*profile->second, ""), finding.field()))) {
          continue;  // said already, for the file that has both
        }
        finding.set_entry(binding.profile);
        finding.set_message(absl::StrCat("as resolved for ", binding.scope, " (the floor",
                                         scope->is_global() ? "" : ", the global binding",
                                         ", then profile '", binding.profile,
                                         "'): ", finding.message()));
        out.push_back(std::move(finding));
      }
    }

    // Stale acks: consent to a loosening its profile does not perform (any more).
    auto it = profiles.find(binding.profile);
    if (it == profiles.end() || !it->second.ok()) continue;
    // The same profile judged for the same kind of scope performs the same loosenings.
    const std::string key = absl::StrCat(scope->is_global() ? "g:" : "a:", binding.profile);
    auto cached = performed_by.find(key);
    if (cached == performed_by.end()) {
      const std::vector<std::string> tokens =
          Tokens(BindingLoosenings(resolver, *scope, *it->second));
      cached = performed_by
                   .emplace(key, absl::flat_hash_set<std::string>(tokens.begin(), tokens.end()))
                   .first;
    }
    const absl::flat_hash_set<std::string>& performed = cached->second;
    std::vector<std::string> kept;
    for (const std::string& ack : binding.acks) {
      if (performed.contains(ack)) kept.push_back(ack);
    }
    for (const std::string& ack : binding.acks) {
      if (performed.contains(ack)) continue;
      const size_t colon = ack.find(':');
      out.push_back(MakeFinding(
          leash::v1::SEVERITY_WARNING, binding.scope,
          colon == std::string::npos ? ack : ack.substr(0, colon), ack,
          absl::StrCat("ack '", ack, "' is stale: profile '", binding.profile,
                       "' performs no such loosening for ", binding.scope,
                       ", so it consents to nothing now and would let a later edit through "
                       "unasked; drop it by re-binding: ",
                       RenderCommand({"sudo", "leash", "bind", binding.scope, binding.profile},
                                     kept))));
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, profile] : profiles) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const absl::StatusOr<Config>& profile = profiles.at(name);
    const std::string source = absl::StrCat("profile:", name);
    if (!profile.ok()) {
      out.push_back(MakeFinding(leash::v1::SEVERITY_ERROR, source, "", "",
                                std::string(profile.status().message())));
      continue;
    }
    for (Finding& finding : ValidateConfig(*profile, source)) out.push_back(std::move(finding));
    for (Finding& finding : ValidateProfileDenies(floor, *profile, source)) {
      out.push_back(std::move(finding));
    }
  }
  return out;
}

std::vector<Finding> ValidatePolicy(const Config& floor, const Bindings& bindings,
                                    const ProfileLibrary& profiles,
                                    const std::vector<std::string>& agent_accounts,
                                    const ListTexts* lists) {
  std::vector<Finding> out = ValidateConfig(floor, "floor");
  for (Finding& finding : ValidateTiers(floor, bindings, profiles, agent_accounts)) {
    out.push_back(std::move(finding));
  }
  if (lists == nullptr) return out;
  for (Finding& finding : ValidateLists(floor, "floor", *lists)) out.push_back(std::move(finding));
  std::vector<std::string> names;
  for (const auto& [name, profile] : profiles) {
    if (profile.ok()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    for (Finding& finding :
         ValidateLists(*profiles.at(name), absl::StrCat("profile:", name), *lists)) {
      out.push_back(std::move(finding));
    }
  }
  return out;
}

std::optional<Refusal> RefuseNewErrors(absl::string_view what, const std::vector<Finding>& before,
                                       const std::vector<Finding>& after) {
  std::vector<Finding> added = NewBlockingFindings(before, after);
  if (added.empty()) return std::nullopt;
  Refusal refusal = MakeRefusal(
      kRefusalValidate,
      absl::StrCat(what, " would leave a policy that `leash validate` reports ", added.size(),
                   added.size() == 1 ? " error" : " errors",
                   " in (leashd judges writes and validate alike); nothing was written:"));
  for (Finding& finding : added) *refusal.add_findings() = std::move(finding);
  return refusal;
}

}  // namespace leash::engine
