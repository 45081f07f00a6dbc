#include "engine/scope.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace leash::engine {
namespace {

constexpr absl::string_view kAgentKind = "agent:";
constexpr absl::string_view kTeamKind = "team:";

std::string TeamRemoved(absl::string_view text) {
  return absl::StrCat(
      "scope '", text,
      "': team is not a policy tier (removed 2026-10-14); a team that should share a policy "
      "binds one profile to each of its agents: leash bind agent:<account> <profile>");
}

}  // namespace

std::string Scope::ToString() const {
  return kind == Kind::kGlobal ? "global" : absl::StrCat(kAgentKind, account);
}

bool IsAccountNameSyntax(absl::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  if (absl::EndsWith(name, "$")) name.remove_suffix(1);
  if (name.empty()) return false;
  const char first = name.front();
  if (!(absl::ascii_islower(first) || first == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-';
  });
}

absl::StatusOr<Scope> ParseScope(absl::string_view text) {
  if (text == "global") return Scope::Global();
  if (absl::StartsWith(text, kTeamKind)) return absl::InvalidArgumentError(TeamRemoved(text));
  if (!absl::StartsWith(text, kAgentKind)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scope '", text, "' is neither global nor agent:<account> (e.g. agent:leash-iris)"));
  }
  absl::string_view account = text.substr(kAgentKind.size());
  if (account.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scope '", text, "' names no account; write agent:<account>"));
  }
  if (!IsAccountNameSyntax(account)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scope '", text, "': '", account,
        "' is not a Linux account name (a display name?); a scope names the account discovery "
        "reads from passwd, e.g. agent:leash-iris"));
  }
  return Scope::Agent(std::string(account));
}

std::string FoldDisplayName(absl::string_view display) {
  std::string out;
  bool pending_dash = false;
  for (char c : display) {
    if (absl::ascii_isalnum(c)) {
      if (pending_dash && !out.empty()) out.push_back('-');
      pending_dash = false;
      out.push_back(absl::ascii_tolower(c));
    } else {
      pending_dash = true;
    }
  }
  return out;
}

std::vector<std::string> AccountsForDisplayName(absl::string_view display,
                                                const std::vector<std::string>& agent_accounts) {
  std::string folded = FoldDisplayName(display);
  // "leash-iris" folds to "leash-iris": the agent part is what the slug was minted from.
  const std::string folded_prefix = FoldDisplayName(kAgentPrefix) + "-";
  if (absl::StartsWith(folded, folded_prefix)) folded = folded.substr(folded_prefix.size());
  std::vector<std::string> out;
  if (folded.empty()) return out;
  const std::string base = absl::StrCat(kAgentPrefix, folded);
  for (const std::string& account : agent_accounts) {
    if (account == base) {
      out.push_back(account);
      continue;
    }
    absl::string_view rest = account;
    if (!absl::ConsumePrefix(&rest, base) || !absl::ConsumePrefix(&rest, "-")) continue;
    int suffix = 0;
    if (!rest.empty() && absl::SimpleAtoi(rest, &suffix) && suffix >= 2 &&
        std::all_of(rest.begin(), rest.end(), absl::ascii_isdigit)) {
      out.push_back(account);
    }
  }
  return out;
}

ScopeCheck CheckScopeForWrite(absl::string_view text,
                              const std::vector<std::string>& agent_accounts,
                              absl::string_view configured_user) {
  ScopeCheck check;
  if (absl::StartsWith(text, kTeamKind)) {
    check.status = absl::InvalidArgumentError(TeamRemoved(text));
    return check;
  }
  absl::string_view agent_part = text;
  const bool is_agent = absl::ConsumePrefix(&agent_part, kAgentKind);
  absl::StatusOr<Scope> parsed = ParseScope(text);
  if (is_agent && !agent_part.empty()) {
    check.candidates = AccountsForDisplayName(agent_part, agent_accounts);
  }
  auto naming = [&](std::string message) {
    if (check.candidates.size() == 1) {
      absl::StrAppend(&message, "; the account for '", agent_part, "' is ",
                      check.candidates.front(), ": write agent:", check.candidates.front());
    } else if (!check.candidates.empty()) {
      absl::StrAppend(&message, "; accounts that match '", agent_part,
                      "': ", absl::StrJoin(check.candidates, ", "));
    }
    return message;
  };
  if (!parsed.ok()) {
    check.status = absl::InvalidArgumentError(naming(std::string(parsed.status().message())));
    return check;
  }
  check.scope = *parsed;
  if (parsed->is_global()) return check;

  const std::string& account = parsed->account;
  if (!configured_user.empty() && account == configured_user) {
    check.status = absl::InvalidArgumentError(absl::StrCat(
        "scope '", text, "': ", account,
        " is the configured user; it resolves to the floor with no tier of its own, so no "
        "agent: binding can re-point the control plane's own confinement (edit the floor, "
        "or bind global)"));
    return check;
  }
  if (std::find(agent_accounts.begin(), agent_accounts.end(), account) != agent_accounts.end()) {
    return check;
  }
  if (!absl::StartsWith(account, kAgentPrefix)) {
    check.status = absl::InvalidArgumentError(naming(absl::StrCat(
        "scope '", text, "': '", account, "' is not an agent account (discovery reads only ",
        kAgentPrefix, "* accounts from passwd), so the binding would resolve for nobody")));
  } else {
    check.status = absl::InvalidArgumentError(naming(absl::StrCat(
        "scope '", text, "': no agent account '", account,
        "' in passwd, so the binding would resolve for nobody")));
  }
  return check;
}

}  // namespace leash::engine
