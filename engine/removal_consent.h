// Consent for the two removals that are not unbinds: an entry taken out of the floor (`leash
// <surface> remove <entry>`) and a profile deleted (`leash profile delete <name>`). Pure, like
// consent.h: leashd reads the files, calls these, and writes only what they allow.
//
// Judged like every write (docs/ARCHITECTURE.md, rules P3 and P6):
//  - The floor is the base of every subject, so a floor edit that loosens loosens every subject
//    on the host: removing a deny is the engine's own unset.deny and needs its --ack; removing an
//    allow tightens and proceeds.
//  - Deleting a profile a binding still names strands that binding: its subjects (for global,
//    every subject on the host) are denied everything until the profile is saved again. That is
//    refused in the same form, naming each binding, the unbind that returns its subjects to the
//    floor instead, and the --ack 'dangling:<scope>' that strands it deliberately.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/tiers.h"
#include "leash/v1/judgement.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

struct FloorEditJudgement {
  // Set when the edit must not be written.
  std::optional<leash::v1::Refusal> refusal;
  // Said out loud: acks not needed.
  std::vector<std::string> notices;
  // The given acks the edit needed (each matches one of its loosenings): the consent the
  // ledger records before the floor is written.
  std::vector<std::string> consent;
};

// Judges replacing the floor `before` by `after` (both as loaded; defaults are applied here).
// `what` says what the edit is ("removing commands.deny 'ssh' from the floor"); `words` is the
// operator's command for the re-run line. Refuses: a malformed ack (kind "ack"); every
// unacknowledged loosening (kind "loosening", scope "floor", with the re-run line).
FloorEditJudgement JudgeFloorEdit(const leash::v1::Config& before, const leash::v1::Config& after,
                                  absl::string_view what, const std::vector<std::string>& words,
                                  const std::vector<std::string>& acks);

// The token that consents to leaving the binding of `scope` dangling: "dangling:<scope>".
std::string DanglingToken(absl::string_view scope);

struct ProfileDeleteJudgement {
  std::optional<leash::v1::Refusal> refusal;
  // For each binding left dangling with consent: what it now does, and how to undo it.
  std::vector<std::string> notices;
  // The given 'dangling:<scope>' acks the delete needed: what the ledger records.
  std::vector<std::string> consent;
};

// Judges deleting profile `name` while `bindings` are in force. Refuses (kind "dangling") a
// delete that would leave any binding naming it without its --ack 'dangling:<scope>'; refuses
// (kind "ack") an ack that is not of that form.
ProfileDeleteJudgement JudgeProfileDelete(const Bindings& bindings, absl::string_view name,
                                          const std::vector<std::string>& acks);

}  // namespace leash::engine
