// A write judged completely: consent (consent.h) and validate's judgement of the policy the
// write would leave (consent.h RefuseNewErrors) in one refusal. A loosening refusal's re-run
// line is judged as it would run, with every token it carries: when validate would then refuse
// it, the refusal carries those findings too, prints no line, and says what must change
// first — so a printed re-run line, run verbatim, is never refused (docs/ARCHITECTURE.md,
// rule P13). Pure: `PolicyJudge` is the caller's validate (with the host's named lists).
//
// API (for controlplane/policy_store's Bind / SaveProfile / Unbind and leashd's floor edits):
//   CompleteRefusal()             a consent refusal plus the validate refusal of its re-run.
//   JudgeBindCompletely()         JudgeBind, then validate as the write (or its re-run) would.
//   JudgeProfileEditCompletely()  the same for JudgeProfileEdit.
//   JudgeUnbindCompletely()       the same for JudgeUnbind.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/consent.h"
#include "leash/v1/judgement.pb.h"

namespace leash::engine {

// validate's findings for the policy `bindings` and `profiles` make (over the caller's floor).
using PolicyJudge = std::function<std::vector<leash::v1::Finding>(const Bindings& bindings,
                                                                  const ProfileLibrary& profiles)>;

// `consent` (a loosening refusal) completed with `validate`, the validate refusal its re-run
// line would meet: its findings added, the re-run line dropped (it would be refused), and the
// message saying what must change before any consent can let the write through.
leash::v1::Refusal CompleteRefusal(leash::v1::Refusal consent, const leash::v1::Refusal& validate);

// The --ack values a refusal's re-run line carries: `given` and every listed token.
std::vector<std::string> RerunAcks(const leash::v1::Refusal& refusal,
                                   const std::vector<std::string>& given);

BindJudgement JudgeBindCompletely(const Resolver& current, const Scope& scope,
                                  absl::string_view profile_name,
                                  const leash::v1::Config& fragment,
                                  const std::vector<std::string>& acks,
                                  const std::vector<std::string>& agent_accounts,
                                  const PolicyJudge& judge);

ProfileEditJudgement JudgeProfileEditCompletely(const Resolver& current, absl::string_view name,
                                                const leash::v1::Config& fragment,
                                                const std::vector<std::string>& agent_acks,
                                                absl::string_view from_path,
                                                const std::vector<std::string>& agent_accounts,
                                                const PolicyJudge& judge);

UnbindJudgement JudgeUnbindCompletely(const leash::v1::Config& floor, const Bindings& bindings,
                                      const ProfileLibrary& profiles,
                                      absl::string_view scope_text,
                                      const std::vector<std::string>& agent_accounts,
                                      const std::vector<std::string>& acks,
                                      const PolicyJudge& judge);

}  // namespace leash::engine
