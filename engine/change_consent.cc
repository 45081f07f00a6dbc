#include "engine/change_consent.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/scope.h"

namespace leash::engine {
namespace {

void AddAgentsOf(const Bindings& bindings, absl::flat_hash_set<std::string>& seen,
                 std::vector<std::string>& out) {
  for (const Binding& binding : bindings.entries()) {
    absl::StatusOr<Scope> scope = ParseScope(binding.scope);
    if (scope.ok() && !scope->is_global() && seen.insert(scope->account).second) {
      out.push_back(scope->account);
    }
  }
}

// Why `failure` holds its subject closed, in FailClosedRemoval's words.
std::string WhyClosed(const ResolveFailure& failure) {
  if (failure.kind == ResolveFailure::Kind::kDanglingProfile) {
    return absl::StrCat("its profile '", failure.profile, "' is deleted");
  }
  return absl::StrCat("its policy does not resolve: ", ResolveFailureKindName(failure.kind));
}

}  // namespace

std::vector<std::string> ReachedAgents(const std::vector<std::string>& agent_accounts,
                                       const Bindings& before, const Bindings& after) {
  std::vector<std::string> out;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& account : agent_accounts) {
    if (seen.insert(account).second) out.push_back(account);
  }
  AddAgentsOf(before, seen, out);
  AddAgentsOf(after, seen, out);
  return out;
}

std::vector<FieldChange> ResolvedChange::ByToken() const {
  std::vector<FieldChange> out;
  absl::flat_hash_set<std::string> have;
  for (const SubjectLoosening& loosening : loosenings) {
    if (have.insert(loosening.change.ack_token).second) out.push_back(loosening.change);
  }
  return out;
}

std::vector<FieldChange> ResolvedChange::For(const std::string& subject) const {
  std::vector<FieldChange> out;
  for (const SubjectLoosening& loosening : loosenings) {
    if (loosening.subject == subject) out.push_back(loosening.change);
  }
  return out;
}

ResolvedChange JudgeResolvedChange(const Resolver& before, const Resolver& after,
                                   const Reached& reached) {
  ResolvedChange out;
  auto judge = [&](const std::string& subject, const ResolvedSubject& was,
                   const ResolvedSubject& will) {
    if (!will.ok()) {
      if (was.ok()) {
        out.notices.push_back(absl::StrCat("after this, ", subject,
                                           " does not resolve and is denied everything at its "
                                           "next run start: ",
                                           will.failure->message));
      }
      return;  // denied everything after: nothing it may do is widened
    }
    if (!was.ok()) {
      out.loosenings.push_back(
          {subject, FailClosedRemoval(was.failure->scope, was.failure->profile,
                                      WhyClosed(*was.failure))});
      return;
    }
    for (FieldChange& change : Loosenings(*was.policy, *will.policy)) {
      out.loosenings.push_back({subject, std::move(change)});
    }
  };
  if (reached.configured_user) {
    judge(absl::StrCat("user:", before.floor().user()), before.ResolveConfiguredUser(),
          after.ResolveConfiguredUser());
  }
  for (const std::string& account : reached.agents) {
    judge(Scope::Agent(account).ToString(), before.ResolveAgent(account),
          after.ResolveAgent(account));
  }
  return out;
}

}  // namespace leash::engine
