// The before/after judgement every policy write gets on top of its own check: each subject the
// write reaches is resolved before and after it, exactly as run start would, and every field
// that differs in the loosening direction needs its --ack (docs/ARCHITECTURE.md, rule P12).
// A rebind is an unbind plus a bind; a profile re-save, a global bind and a floor edit reach
// every subject that resolves through them. Pure: the caller builds the two Resolvers.
//
// API (for consent.cc's JudgeBind / JudgeProfileEdit, removal_consent.cc's JudgeFloorEdit and
// the stores' ledgers):
//   ReachedAgents()        the agents a host-wide write reaches.
//   JudgeResolvedChange()  every loosening, per subject, and what becomes unresolvable.
//
// Failures count as policies: a subject denied everything before (its binding dangling or
// unacknowledged) that resolves after is loosened (fail_closed:<profile>); one that resolves
// before and is denied everything after is tightened (said out loud, never refused).
#pragma once

#include <string>
#include <vector>

#include "engine/loosening.h"
#include "engine/tiers.h"

namespace leash::engine {

// The subjects a write reaches: agent accounts, and the configured single user.
struct Reached {
  std::vector<std::string> agents;
  bool configured_user = false;
};

// Every agent of `agent_accounts` and every agent a binding of `before` or `after` names, once
// each, in that order: what a global bind or a floor edit reaches.
std::vector<std::string> ReachedAgents(const std::vector<std::string>& agent_accounts,
                                       const Bindings& before, const Bindings& after);

struct SubjectLoosening {
  // "agent:<account>", or "user:<name>" for the configured user.
  std::string subject;
  FieldChange change;
};

struct ResolvedChange {
  // Every loosening, subject by subject (in `Reached` order), each in table order.
  std::vector<SubjectLoosening> loosenings;
  // Subjects that resolve before and are denied everything after (a tightening said out loud).
  std::vector<std::string> notices;

  // The loosenings once by token (the same token consents for every subject of a plain --ack).
  std::vector<FieldChange> ByToken() const;
  // The loosenings of `subject` only.
  std::vector<FieldChange> For(const std::string& subject) const;
};

// Resolves each subject of `reached` under `before` and `after` and classifies what differs.
ResolvedChange JudgeResolvedChange(const Resolver& before, const Resolver& after,
                                   const Reached& reached);

}  // namespace leash::engine
