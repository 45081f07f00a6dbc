#include "engine/complete_judgement.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/refusal.h"

namespace leash::engine {
namespace {

using leash::v1::Refusal;

bool IsConsentRefusal(const std::optional<Refusal>& refusal) {
  return refusal && refusal->kind() == kRefusalLoosening && !refusal->rerun().empty();
}

// The validate refusal of `what` when the write takes the policy from (`bindings_before`,
// `profiles_before`) to (`bindings_after`, `profiles_after`).
std::optional<Refusal> Validate(absl::string_view what, const PolicyJudge& judge,
                                const Bindings& bindings_before,
                                const ProfileLibrary& profiles_before,
                                const Bindings& bindings_after,
                                const ProfileLibrary& profiles_after) {
  return RefuseNewErrors(what, judge(bindings_before, profiles_before),
                         judge(bindings_after, profiles_after));
}

// `judgement.refusal` when the write (no refusal) or its re-run (a consent refusal) would be
// refused by validate: `validate` itself, or the consent refusal completed with it.
template <typename Judgement>
void Complete(Judgement& judgement, std::optional<Refusal> validate) {
  if (!validate) return;
  judgement.refusal = judgement.refusal ? CompleteRefusal(*std::move(judgement.refusal), *validate)
                                        : *std::move(validate);
}

}  // namespace

Refusal CompleteRefusal(Refusal consent, const Refusal& validate) {
  for (const leash::v1::Finding& finding : validate.findings()) *consent.add_findings() = finding;
  consent.clear_rerun();
  consent.set_message(absl::StrCat(
      consent.message(), ". With that consent it would still be refused: it would leave a "
                         "policy `leash validate` reports ",
      validate.findings_size(), validate.findings_size() == 1 ? " error" : " errors",
      " in (listed below), which no --ack lets through; change the policy so that it does "
      "not, then run the command again and give the consent it then asks for"));
  return consent;
}

std::vector<std::string> RerunAcks(const Refusal& refusal, const std::vector<std::string>& given) {
  std::vector<std::string> out = given;
  for (const leash::v1::Loosening& loosening : refusal.loosenings()) {
    if (loosening.ack_token().empty()) continue;
    if (std::find(out.begin(), out.end(), loosening.ack_token()) == out.end()) {
      out.push_back(loosening.ack_token());
    }
  }
  return out;
}

BindJudgement JudgeBindCompletely(const Resolver& current, const Scope& scope,
                                  absl::string_view profile_name,
                                  const leash::v1::Config& fragment,
                                  const std::vector<std::string>& acks,
                                  const std::vector<std::string>& agent_accounts,
                                  const PolicyJudge& judge) {
  BindJudgement judgement =
      JudgeBind(current, scope, profile_name, fragment, acks, agent_accounts);
  if (judgement.refusal && !IsConsentRefusal(judgement.refusal)) return judgement;
  // The write as it would be made: as given, or as its re-run line would give it.
  const BindJudgement as_made =
      judgement.refusal ? JudgeBind(current, scope, profile_name, fragment,
                                    RerunAcks(*judgement.refusal, acks), agent_accounts)
                        : judgement;
  if (as_made.refusal) return judgement;
  Bindings after = current.bindings();
  after.Put(as_made.binding);
  ProfileLibrary profiles_after = current.profiles();
  profiles_after.insert_or_assign(std::string(profile_name), fragment);
  Complete(judgement,
           Validate(absl::StrCat("binding '", profile_name, "' to ", scope.ToString()), judge,
                    current.bindings(), current.profiles(), after, profiles_after));
  return judgement;
}

ProfileEditJudgement JudgeProfileEditCompletely(const Resolver& current, absl::string_view name,
                                                const leash::v1::Config& fragment,
                                                const std::vector<std::string>& agent_acks,
                                                absl::string_view from_path,
                                                const std::vector<std::string>& agent_accounts,
                                                const PolicyJudge& judge) {
  ProfileEditJudgement judgement =
      JudgeProfileEdit(current, name, fragment, agent_acks, from_path, agent_accounts);
  if (judgement.refusal && !IsConsentRefusal(judgement.refusal)) return judgement;
  const ProfileEditJudgement as_made =
      judgement.refusal
          ? JudgeProfileEdit(current, name, fragment, RerunAcks(*judgement.refusal, agent_acks),
                             from_path, agent_accounts)
          : judgement;
  if (as_made.refusal) return judgement;
  ProfileLibrary profiles_after = current.profiles();
  profiles_after.insert_or_assign(std::string(name), fragment);
  Complete(judgement, Validate(absl::StrCat("saving profile '", name, "'"), judge,
                               current.bindings(), current.profiles(), as_made.bindings,
                               profiles_after));
  return judgement;
}

UnbindJudgement JudgeUnbindCompletely(const leash::v1::Config& floor, const Bindings& bindings,
                                      const ProfileLibrary& profiles,
                                      absl::string_view scope_text,
                                      const std::vector<std::string>& agent_accounts,
                                      const std::vector<std::string>& acks,
                                      const PolicyJudge& judge) {
  UnbindJudgement judgement =
      JudgeUnbind(floor, bindings, profiles, scope_text, agent_accounts, acks);
  if (judgement.refusal && !IsConsentRefusal(judgement.refusal)) return judgement;
  Bindings after = bindings;
  after.Remove(judgement.binding.scope);
  Complete(judgement, Validate(absl::StrCat("unbinding ", judgement.binding.scope), judge,
                               bindings, profiles, after, profiles));
  return judgement;
}

}  // namespace leash::engine
