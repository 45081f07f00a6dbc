// `leash validate`'s judgement of one policy: the things that make a policy enforce less than
// it reads as if it does. Errors and criticals make validate exit non-zero; warnings do not.
#pragma once

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
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
//  - a surface in audit: it blocks nothing (warning);
//  - an IP/CIDR network allow entry that opens an address or range the proxy's destination
//    guard keeps names away from (engine/guarded_ranges.h): a name resolving there is then
//    connected to (warning, naming each, the cloud metadata addresses by what they are).
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

// What the host answers about a floor that leashd needs before it will start on it.
struct StartFacts {
  // Whether an account of that name resolves; an error when the account database cannot be
  // read. leashd asks its account source, the CLI the system's account database.
  std::function<absl::StatusOr<bool>(absl::string_view name)> user_exists;
};

// What makes leashd refuse to start on `floor` (read from `path`), as validate errors, so that
// a floor validate passes is one leashd runs on: no user named (an empty file, or one without
// `user:`); a user that does not resolve, or an account database that cannot be read. leashd
// refuses with the message of the first; validate (leashd's and the offline one) reports all.
std::vector<leash::v1::Finding> ValidateStart(const leash::v1::Config& floor,
                                              absl::string_view path, const StartFacts& facts);

// The blocking findings (error, critical) of `after` that `before` does not have, matched by
// severity, source, field and entry (not by message: a count in it changes with the list).
// What a policy write would add to validate's errors: one judgement for writes and validate.
// A finding already there before does not block a write, so a write that fixes part of an
// invalid policy is not refused for the part it leaves.
std::vector<leash::v1::Finding> NewBlockingFindings(const std::vector<leash::v1::Finding>& before,
                                                    const std::vector<leash::v1::Finding>& after);

// True when any finding is an error or critical.
bool HasBlockingFinding(const std::vector<leash::v1::Finding>& findings);

// "critical", "error", "warning", "info".
absl::string_view SeverityName(leash::v1::Severity severity);

}  // namespace leash::engine
