// The exact `leash profile save` and `leash bind` lines that put a suggested fragment in force
// for one agent, with every --ack the change needs. The acks are the engine's consent
// judgement's own (engine/consent.h JudgeProfileEdit and JudgeBind, the calls leashd makes on
// those writes), asked about the host's floor, bindings and profiles as read: never derived
// here. Pure.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/tiers.h"
#include "leash/v1/decision.pb.h"
#include "leash/v1/policy.pb.h"

namespace leash::cli {

struct HostPolicy {
  leash::v1::Config floor;
  engine::Bindings bindings;
  engine::ProfileLibrary profiles;
};

struct ConsentLines {
  // In order: the save, then the bind (absent when the agent is already bound to the profile).
  std::vector<std::string> commands;
  // Said beside them: the save reaches other agents; a refusal no --ack can lift; ...
  std::vector<std::string> notes;
};

// The surfaces an agent's profile would be laid over in audit: those the floor, with the
// global binding folded in, audits (the floor alone when that binding does not resolve).
std::set<leash::v1::Surface> AuditedBeneath(const HostPolicy& host);

// The lines for saving `fragment` as profile `profile` from the file `from_path` and binding it
// to agent:<account>. None for the floor's configured user, which no binding may name: a note
// says so instead.
ConsentLines SaveAndBindLines(const HostPolicy& host, absl::string_view account,
                              absl::string_view profile, const leash::v1::Config& fragment,
                              absl::string_view from_path);

}  // namespace leash::cli
