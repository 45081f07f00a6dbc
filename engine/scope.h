// Binding scopes: `global` or `agent:<account>`, where the account is a Linux account name as
// discovery reads it from passwd — never a display name.
//
// API (for leashd and the CLI):
//   Scope                      global | agent:<account>, with ToString().
//   ParseScope(text)           syntax only (used on load, by unbind, by the resolver).
//   CheckScopeForWrite(...)    what `leash bind` accepts: the account must be a discovered agent
//                              account; `team:` and display names are refused with the reason,
//                              naming the real account where one matches the display name.
//   AccountsForDisplayName()   the agent accounts a display name could have been minted as.
//
// A scope names a Linux account, never a display name (docs/ARCHITECTURE.md, rule P2):
// agent:Iris is refused rather than written, because it would be a binding that resolves for
// nobody with nothing anywhere saying so. Where the real account exists, the refusal names it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::engine {

// The prefix Sentinel mints an agent's Linux account with (discovery reads only these).
inline constexpr absl::string_view kAgentPrefix = "leash-";

struct Scope {
  enum class Kind { kGlobal, kAgent };
  Kind kind = Kind::kGlobal;
  // kAgent: the Linux account name.
  std::string account;

  static Scope Global() { return Scope{}; }
  static Scope Agent(std::string account) { return Scope{Kind::kAgent, std::move(account)}; }
  bool is_global() const { return kind == Kind::kGlobal; }
  // "global" or "agent:<account>".
  std::string ToString() const;
  bool operator==(const Scope& other) const {
    return kind == other.kind && account == other.account;
  }
};

// Whether `name` has the shape of a Linux account name (lowercase letter or '_' first, then
// lowercase letters, digits, '_' and '-', at most 32 characters, optionally ending in '$').
bool IsAccountNameSyntax(absl::string_view name);

// Parses the syntax of a scope. InvalidArgument (naming the text and the fix) for `team:...`
// (no longer a tier), an unknown kind, or an agent part that is not an account name's shape.
absl::StatusOr<Scope> ParseScope(absl::string_view text);

// Folds a display name the way an account slug is folded: lowercase ASCII letters and digits,
// every other run of characters one '-', no leading or trailing '-'. "Iris" -> "iris",
// "Darth Vader" -> "darth-vader".
std::string FoldDisplayName(absl::string_view display);

// The agent accounts `display` could have been minted as: leash-<slug> and its collision
// suffixes leash-<slug>-2, leash-<slug>-3 ... (a leading "leash-" in `display` is ignored
// before folding). Sorted as `agent_accounts` is.
std::vector<std::string> AccountsForDisplayName(absl::string_view display,
                                                const std::vector<std::string>& agent_accounts);

struct ScopeCheck {
  absl::Status status;  // OK when `scope` is usable for a write.
  Scope scope;
  // On refusal: the real accounts the text could have meant (empty when none matches).
  std::vector<std::string> candidates;
};

// What a write (`leash bind`) accepts. `agent_accounts`: the discovered agent accounts (passwd,
// leash-*). `configured_user`: the floor's single user, which resolves to the floor with no tier
// of its own, so no agent: binding may name it. Refusals are InvalidArgument whose message says
// why and what to write instead.
ScopeCheck CheckScopeForWrite(absl::string_view text,
                              const std::vector<std::string>& agent_accounts,
                              absl::string_view configured_user);

}  // namespace leash::engine
