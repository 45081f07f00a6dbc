// Loosening classification: every field change between two policies is a tightening, a
// loosening or neutral, and every loosening carries the exact consent token an operator types
// as --ack '<field>:<value>'. Acks are matched exactly (string equality of the token).
//
// API (for leashd, the CLI and the consent judgement in consent.h):
//   ClassifyChanges(before, after)  every field change, in field order, with its Effect.
//   Loosenings(before, after)       only the loosenings.
//   ParseAckToken / ParseAgentAck   the --ack forms `<field>:<value>` and
//                                   `agent:<account>=<field>:<value>` (profile save).
//   FailClosedRemoval(...)          the one loosening that is not a field: removing a binding
//                                   that holds its subject fail-closed (fail_closed:<profile>).
//
// The table (before/after are effective policies, engine::WithDefaults applied):
//   field                          change                               effect   token
//   fail_mode                      closed(or a typo)->open              loosen   fail_mode:open
//                                  open->closed / open->typo            tighten
//                                  closed<->typo                        neutral (both closed)
//   <surface>.mode                 whitelist->blacklist                 loosen   <surface>.mode:blacklist
//                                  blacklist->whitelist                 tighten
//   <surface>.allow                entry added, whitelist before+after  loosen   <surface>.allow:<entry>
//                                  entry added, blacklist before/after  neutral (default-allow then,
//                                                                        or never consulted now)
//                                  entry removed, whitelist after       tighten
//                                  entry removed, blacklist after       neutral (never consulted)
//   <surface>.deny                 entry removed                        loosen   unset.deny:<surface>:<entry>
//                                  entry added                          tighten
//   network.udp                    drop->allow                          loosen   network.udp:allow
//                                  allow->drop                          tighten
//   network.inbound                drop->allow                          loosen   network.inbound:allow
//                                  allow->drop                          tighten
//   network.dns                    filter->resolvers                    loosen   network.dns:resolvers
//                                  resolvers->filter                    tighten
//   network.dns_resolvers          resolver added                       loosen   network.dns_resolvers:<ip>
//                                  list emptied (host's resolv.conf)    loosen   network.dns_resolvers:/etc/resolv.conf
//                                  resolver removed                     tighten
//                                  empty -> explicit list               tighten (host resolvers dropped)
//   tools.inspect.<category>       lowered (block->log|allow, log->allow) loosen tools.inspect.<category>:<action>
//                                  raised                               tighten
//   tools.max_input_bytes          raised                               loosen   tools.max_input_bytes:<bytes>
//                                  lowered                              tighten
//   enforcers.<surface>            true->false                          loosen   enforcers.<surface>:false
//                                  false->true                          tighten
//   logging.level, logging.decisions, user   any change                 neutral (not what a subject may do)
// <surface> is network, filesystem, commands or tools. Entries compare as written (exact
// strings): an entry respelled is reported as added — a refusal where none was needed, never
// a loosening missed.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

enum class Effect { kTighten, kLoosen, kNeutral };

// "tighten", "loosen", "neutral".
absl::string_view EffectName(Effect effect);

struct FieldChange {
  // The policy field, e.g. "network.allow", "fail_mode", "tools.inspect.secrets".
  std::string field;
  // The value the change is about: the entry added or removed, the new mode or action.
  std::string value;
  Effect effect = Effect::kNeutral;
  // In the engine's own words: what changes and what it means for the subject.
  std::string message;
  // Loosenings only: the exact consent token, "<field>:<value>" (e.g. "fail_mode:open",
  // "unset.deny:commands:ssh").
  std::string ack_token;
};

// Every field that differs between `before` and `after`, both effective policies (WithDefaults
// applied — a fragment must be overlaid first), in the table's field order.
std::vector<FieldChange> ClassifyChanges(const leash::v1::Config& before,
                                         const leash::v1::Config& after);

// The loosenings among ClassifyChanges(before, after).
std::vector<FieldChange> Loosenings(const leash::v1::Config& before,
                                    const leash::v1::Config& after);

// The loosening of removing a binding whose subject is held fail-closed (its profile deleted
// or unresolvable): the subject goes from denied-everything to the policy beneath it.
// `why` says what holds it closed, e.g. "its profile 'web-research' is deleted".
FieldChange FailClosedRemoval(absl::string_view scope, absl::string_view profile,
                              absl::string_view why);

struct AckToken {
  std::string field;
  std::string value;
  std::string ToString() const { return field + ":" + value; }
};

// Parses `<field>:<value>`. `field` must be one that takes consent (every token field of the
// table above, plus unset.deny and fail_closed); `value` must be non-empty and free of control
// characters. InvalidArgument names the token and lists the fields.
absl::StatusOr<AckToken> ParseAckToken(absl::string_view text);

struct AgentAck {
  // The agent account the consent is for (the part after "agent:").
  std::string account;
  // The token, "<field>:<value>", as given.
  std::string token;
};

// Parses a profile save's per-agent consent, `agent:<account>=<field>:<value>`. A `global=`
// prefix is refused: consent for the global binding is taken only by `leash bind global`.
absl::StatusOr<AgentAck> ParseAgentAck(absl::string_view text);

}  // namespace leash::engine
