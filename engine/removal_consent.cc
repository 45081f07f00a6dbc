#include "engine/removal_consent.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/config_defaults.h"
#include "engine/loosening.h"
#include "engine/refusal.h"

namespace leash::engine {
namespace {

using leash::v1::Refusal;

constexpr absl::string_view kDanglingField = "dangling";

std::string Ways(size_t n) { return n == 1 ? "1 way" : absl::StrCat(n, " ways"); }

}  // namespace

FloorEditJudgement JudgeFloorEdit(const leash::v1::Config& before, const leash::v1::Config& after,
                                  absl::string_view what, const std::vector<std::string>& words,
                                  const std::vector<std::string>& acks) {
  FloorEditJudgement judgement;
  for (const std::string& ack : acks) {
    absl::StatusOr<AckToken> token = ParseAckToken(ack);
    if (!token.ok()) {
      judgement.refusal = MakeRefusal(kRefusalAck, std::string(token.status().message()));
      return judgement;
    }
  }
  const std::vector<FieldChange> loosenings = Loosenings(WithDefaults(before), WithDefaults(after));
  std::vector<std::string> tokens;
  for (const FieldChange& change : loosenings) tokens.push_back(change.ack_token);
  const std::vector<FieldChange> missing = Unacknowledged(loosenings, acks);
  if (!missing.empty()) {
    Refusal refusal = MakeRefusal(
        kRefusalLoosening,
        absl::StrCat(what, " loosens the floor for every subject on the host in ",
                     Ways(missing.size()), " without consent; each needs its own --ack"));
    for (const FieldChange& change : missing) AddLoosening(refusal, "floor", change);
    refusal.set_rerun(RenderCommand(words, tokens));
    judgement.refusal = std::move(refusal);
    return judgement;
  }
  const absl::flat_hash_set<std::string> needed(tokens.begin(), tokens.end());
  for (const std::string& ack : acks) {
    if (!needed.contains(ack)) {
      judgement.notices.push_back(absl::StrCat("--ack '", ack, "' is not needed: ", what,
                                               " performs no such loosening"));
    } else if (std::find(judgement.consent.begin(), judgement.consent.end(), ack) ==
               judgement.consent.end()) {
      judgement.consent.push_back(ack);
    }
  }
  return judgement;
}

std::string DanglingToken(absl::string_view scope) {
  return absl::StrCat(kDanglingField, ":", scope);
}

ProfileDeleteJudgement JudgeProfileDelete(const Bindings& bindings, absl::string_view name,
                                          const std::vector<std::string>& acks) {
  ProfileDeleteJudgement judgement;
  std::vector<std::string> scopes;
  for (const Binding* binding : bindings.NamingProfile(name)) scopes.push_back(binding->scope);
  const absl::flat_hash_set<std::string> bound(scopes.begin(), scopes.end());
  absl::flat_hash_set<std::string> given;
  for (const std::string& ack : acks) {
    if (!absl::StartsWith(ack, absl::StrCat(kDanglingField, ":"))) {
      judgement.refusal = MakeRefusal(
          kRefusalAck,
          absl::StrCat("ack '", ack, "' is not for a profile delete: its only consent is "
                       "'dangling:<scope>', one for each binding the delete leaves dangling"));
      return judgement;
    }
    const std::string scope = ack.substr(kDanglingField.size() + 1);
    if (!bound.contains(scope)) {
      judgement.notices.push_back(absl::StrCat("--ack '", ack, "' is not needed: ", scope,
                                               " is not bound to '", name, "'"));
      continue;
    }
    given.insert(scope);
  }

  std::vector<std::string> missing;
  for (const std::string& scope : scopes) {
    if (!given.contains(scope)) missing.push_back(scope);
  }
  auto denied = [](const std::string& scope) {
    return scope == "global" ? std::string("every subject on the host") : scope;
  };
  if (!missing.empty()) {
    Refusal refusal = MakeRefusal(
        kRefusalDangling,
        absl::StrCat("profile '", name, "' is still bound to ", absl::StrJoin(scopes, ", "),
                     "; deleting it leaves ",
                     missing.size() == 1 ? "that binding" : "those bindings",
                     " dangling, and a dangling binding denies its subjects everything "
                     "(fail-closed) until the profile is saved again. To return them to the "
                     "floor instead, unbind first (each unbind judged on its own): ",
                     absl::StrJoin(missing, "; ",
                                   [](std::string* out, const std::string& scope) {
                                     absl::StrAppend(out, RenderCommand({"sudo", "leash",
                                                                         "unbind", scope},
                                                                        {}));
                                   }),
                     ". To delete it and hold them fail-closed on purpose, each binding needs "
                     "its own --ack"));
    for (const std::string& scope : missing) {
      leash::v1::Loosening& finding = *refusal.add_loosenings();
      finding.set_scope(scope);
      finding.set_field(std::string(kDanglingField));
      finding.set_value(scope);
      finding.set_message(absl::StrCat("the binding of ", scope, " to '", name,
                                       "' dangles: ", denied(scope),
                                       " is denied everything (fail-closed)"));
      finding.set_ack_token(DanglingToken(scope));
    }
    std::vector<std::string> tokens;
    for (const std::string& scope : scopes) tokens.push_back(DanglingToken(scope));
    refusal.set_rerun(RenderCommand({"sudo", "leash", "profile", "delete", std::string(name)},
                                    tokens));
    judgement.refusal = std::move(refusal);
    return judgement;
  }
  for (const std::string& scope : scopes) judgement.consent.push_back(DanglingToken(scope));
  for (const std::string& scope : scopes) {
    // "A dangling binding (its profile deleted) holds its agent fail-closed, denied everything".
    judgement.notices.push_back(absl::StrCat(
        scope, " is still bound to '", name, "', which now dangles: ", denied(scope),
        " is denied everything (fail-closed) until the profile is saved again or the binding "
        "is removed: ",
        RenderCommand({"sudo", "leash", "unbind", scope}, {absl::StrCat("fail_closed:", name)})));
  }
  return judgement;
}

}  // namespace leash::engine
