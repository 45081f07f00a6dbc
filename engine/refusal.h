// Refusals: how a policy write that is not allowed is carried back to the operator — as a
// leash::v1::Refusal (the --json form: kind, message, every loosening with its --ack token,
// inert entries, the whole command to re-run) and as the text the CLI prints.
//
// API:
//   kRefusal* kinds         "loosening", "entry", "scope", "profile", "ack", "changed",
//                           "unjudgeable", "ledger", "dangling", "validate".
//   RenderCommand()         a re-run line: shell-quoted words, then --ack '<token>' each.
//   MakeRefusal / AddLoosening / AddInertEntries   building one.
//   RenderRefusal()         the text form (golden-tested in refusal_test.cc).
//
// A refusal lists every loosening, not the first, each in the engine's own words with its exact
// --ack '<field>:<value>' token, and the whole command to re-run (docs/ARCHITECTURE.md, rule P3).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/loosening.h"
#include "leash/v1/judgement.pb.h"

namespace leash::engine {

// A change would widen a subject's policy beyond its consent.
inline constexpr absl::string_view kRefusalLoosening = "loosening";
// An entry that can never match (refused on write, with inert_entries).
inline constexpr absl::string_view kRefusalEntry = "entry";
// A scope that resolves for nobody (team:, a display name, an unknown account).
inline constexpr absl::string_view kRefusalScope = "scope";
// A profile name that is not allowed, a profile that does not exist or does not load.
inline constexpr absl::string_view kRefusalProfile = "profile";
// An --ack that is malformed, or not for this command (global consent on a profile save).
inline constexpr absl::string_view kRefusalAck = "ack";
// What was judged changed on disk before the write could be made (bind's re-check).
inline constexpr absl::string_view kRefusalChanged = "changed";
// The change cannot be judged (the floor unreadable, a subject unresolvable either way).
inline constexpr absl::string_view kRefusalUnjudgeable = "unjudgeable";
// The unbind ledger record could not be written, so the unbind did not happen.
inline constexpr absl::string_view kRefusalLedger = "ledger";
// A profile delete that would leave a binding naming it dangling (its subjects denied
// everything), without --ack 'dangling:<scope>'.
inline constexpr absl::string_view kRefusalDangling = "dangling";
// The write would leave a policy `leash validate` reports an error in (with findings).
inline constexpr absl::string_view kRefusalValidate = "validate";

// `word` as one shell word: unchanged when it is only letters, digits and _ . / : = @ % + , -;
// otherwise in single quotes (a ' inside written '\'').
std::string ShellQuote(absl::string_view word);

// The whole command: `words` shell-quoted and space-joined, then ` --ack '<token>'` for each
// of `acks` (always quoted, as the operator is shown to type it).
std::string RenderCommand(const std::vector<std::string>& words,
                          const std::vector<std::string>& acks);

leash::v1::Refusal MakeRefusal(absl::string_view kind, std::string message);

// Appends `change` (a loosening) as needing consent from `scope`.
void AddLoosening(leash::v1::Refusal& refusal, absl::string_view scope, const FieldChange& change);

// The text the CLI prints for a refusal, e.g.
//   refused (loosening): binding profile 'web-research' to agent:leash-iris loosens its
//   policy in 2 ways; each needs its own --ack
//     - agent:leash-iris: network.allow gains 'openai.com' while network is ...
//         --ack 'network.allow:openai.com'
//   re-run with consent:
//     sudo leash bind agent:leash-iris web-research --ack 'network.allow:openai.com' ...
std::string RenderRefusal(const leash::v1::Refusal& refusal);

}  // namespace leash::engine
