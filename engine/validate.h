// `leash validate`'s judgement of one policy: the things that make a policy enforce less than
// it reads as if it does. Errors and criticals make validate exit non-zero; warnings do not.
#pragma once

#include <vector>

#include "absl/strings/string_view.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

// Findings for `config` (any tier; `source` names it in each finding, e.g. "floor" or
// "profile:web-research"):
//  - a blacklist surface with a non-empty allow list: never consulted (error);
//  - an inert deny entry: blocks nothing (critical); an inert allow entry (warning);
//  - commands in blacklist mode: a copied or renamed binary evades it (warning);
//  - a fail_mode that is neither closed nor open: treated as closed (warning);
//  - a surface in audit: it blocks nothing (warning).
std::vector<leash::v1::Finding> ValidateConfig(const leash::v1::Config& config,
                                               absl::string_view source);

// The blacklist-with-an-allow-list findings alone (error), e.g. for a policy as resolved
// across tiers, where the mode and the allow list can come from different tiers.
std::vector<leash::v1::Finding> ValidateBlacklistAllow(const leash::v1::Config& config,
                                                       absl::string_view source);

// A profile's deny entries that the floor's deny list of the same surface already has, and a
// profile's empty deny list over a floor's non-empty one (info each): a floor deny holds for
// every subject whatever a profile writes, so neither changes anything, and an operator who
// wrote one may believe otherwise. `source` names the profile ("profile:<name>").
std::vector<leash::v1::Finding> ValidateProfileDenies(const leash::v1::Config& floor,
                                                      const leash::v1::Config& profile,
                                                      absl::string_view source);

// True when any finding is an error or critical.
bool HasBlockingFinding(const std::vector<leash::v1::Finding>& findings);

// "critical", "error", "warning", "info".
absl::string_view SeverityName(leash::v1::Severity severity);

}  // namespace leash::engine
