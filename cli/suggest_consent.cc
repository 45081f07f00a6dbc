#include "cli/suggest_consent.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/consent.h"
#include "engine/refusal.h"
#include "engine/scope.h"

namespace leash::cli {
namespace {

// The refusal's own text, one note per line.
void AddRefusal(const leash::v1::Refusal& refusal, std::vector<std::string>& notes) {
  for (absl::string_view line : absl::StrSplit(engine::RenderRefusal(refusal), '\n')) {
    if (!line.empty()) notes.emplace_back(line);
  }
}

std::vector<std::string> Tokens(const leash::v1::Refusal& refusal) {
  std::vector<std::string> tokens;
  for (const leash::v1::Loosening& loosening : refusal.loosenings()) {
    tokens.push_back(loosening.ack_token());
  }
  return tokens;
}

}  // namespace

std::set<leash::v1::Surface> AuditedBeneath(const HostPolicy& host) {
  const engine::Resolver resolver(host.floor, host.bindings, host.profiles);
  const leash::v1::Config& base =
      resolver.folded() != nullptr ? *resolver.folded() : resolver.floor();
  std::set<leash::v1::Surface> audited;
  if (base.network().audit()) audited.insert(leash::v1::SURFACE_NETWORK);
  if (base.filesystem().audit()) audited.insert(leash::v1::SURFACE_FILESYSTEM);
  if (base.commands().audit()) audited.insert(leash::v1::SURFACE_COMMANDS);
  if (base.tools().audit()) audited.insert(leash::v1::SURFACE_TOOLS);
  return audited;
}

ConsentLines SaveAndBindLines(const HostPolicy& host, absl::string_view account,
                              absl::string_view profile, const leash::v1::Config& fragment,
                              absl::string_view from_path) {
  ConsentLines out;
  if (!host.floor.user().empty() && account == host.floor.user()) {
    // leash bind refuses agent:<configured user> (engine/scope.h): print no line it refuses.
    out.notes.push_back(absl::StrCat(
        account, " is the configured user: it resolves to the floor with no tier of its own, so "
        "no profile can be bound to it. To allow what it did, add the entries to the floor "
        "(`sudo leash <surface> allow <entry>`), which widens every subject on the host"));
    return out;
  }
  const std::string scope = engine::Scope::Agent(std::string(account)).ToString();
  const engine::Resolver current(host.floor, host.bindings, host.profiles);

  // The save, judged against every binding that already names the profile.
  std::vector<std::string> others;
  for (const engine::Binding* binding : host.bindings.NamingProfile(profile)) {
    if (binding->scope != scope) others.push_back(binding->scope);
  }
  if (!others.empty()) {
    out.notes.push_back(absl::StrCat(
        "profile '", profile, "' is already bound to ", absl::StrJoin(others, ", "),
        ": saving this over it changes their policy too; choose another name with --profile"));
  }
  const engine::ProfileEditJudgement edit =
      engine::JudgeProfileEdit(current, profile, fragment, {}, from_path);
  if (!edit.refusal) {
    out.commands.push_back(engine::RenderCommand(
        {"sudo", "leash", "profile", "save", std::string(profile), "--from",
         std::string(from_path)},
        {}));
  } else if (!edit.refusal->rerun().empty()) {
    out.commands.push_back(edit.refusal->rerun());
  } else {
    AddRefusal(*edit.refusal, out.notes);
    return out;
  }

  const engine::Binding* bound = host.bindings.Find(scope);
  if (bound != nullptr && bound->profile == profile) {
    out.notes.push_back(absl::StrCat(scope, " is bound to '", profile,
                                     "' already: the save puts it in force, with its acks"));
    return out;
  }
  // The bind, judged as leashd will judge it once the profile is saved.
  engine::ProfileLibrary saved = host.profiles;
  saved.insert_or_assign(std::string(profile), fragment);
  const engine::Resolver after(host.floor, host.bindings, saved);
  const engine::Scope agent = engine::Scope::Agent(std::string(account));
  engine::BindJudgement bind = engine::JudgeBind(after, agent, profile, fragment, {});
  std::vector<std::string> acks;
  if (bind.refusal && bind.refusal->kind() == engine::kRefusalLoosening) {
    acks = Tokens(*bind.refusal);
    // The line printed must be one leashd accepts: judge it again with its acks.
    bind = engine::JudgeBind(after, agent, profile, fragment, acks);
  }
  if (bind.refusal) {
    AddRefusal(*bind.refusal, out.notes);
    return out;
  }
  out.commands.push_back(
      engine::RenderCommand({"sudo", "leash", "bind", scope, std::string(profile)}, acks));
  for (const std::string& notice : bind.notices) out.notes.push_back(notice);
  return out;
}

}  // namespace leash::cli
