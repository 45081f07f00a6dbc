#include "controlplane/decision_filter.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "engine/decision_line_read.h"

namespace leash::controlplane {
namespace {

bool OneOf(absl::string_view value, std::initializer_list<absl::string_view> allowed) {
  for (absl::string_view a : allowed) {
    if (value == a) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<absl::Time> ParseDecisionTime(absl::string_view text) {
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &time, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not an RFC 3339 time such as 2026-01-02T15:04:05Z"));
  }
  return time;
}

absl::StatusOr<leash::v1::DecisionRecord> ParseDecisionLine(absl::string_view line) {
  return engine::ReadDecisionLine(line);
}

absl::StatusOr<DecisionFilter> FilterFromRequest(const leash::v1::WatchDecisionsRequest& request) {
  DecisionFilter filter;
  filter.account = request.account();
  filter.surface = request.surface();
  filter.action = request.action();
  if (!filter.surface.empty() &&
      !OneOf(filter.surface, {"network", "filesystem", "commands", "tools"})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "surface '", filter.surface, "' is not one of network, filesystem, commands, tools"));
  }
  if (!filter.action.empty() &&
      !OneOf(filter.action, {"allow", "block", "lost", "suppressed", "outcome"})) {
    return absl::InvalidArgumentError(absl::StrCat(
        "action '", filter.action, "' is not one of allow, block, lost, suppressed, outcome"));
  }
  if (request.has_enforced()) filter.enforced = request.enforced();
  if (!request.until().empty()) {
    absl::StatusOr<absl::Time> until = ParseDecisionTime(request.until());
    if (!until.ok()) return absl::InvalidArgumentError(absl::StrCat("until: ", until.status().message()));
    filter.until = *until;
  }
  return filter;
}

bool DecisionFilter::Matches(const StreamedDecision& decision) const {
  const leash::v1::DecisionRecord& record = decision.record;
  if (!account.empty() && decision.account != account) return false;
  if (!surface.empty() && record.surface() != surface) return false;
  if (!action.empty() && record.action() != action) return false;
  if (enforced.has_value()) {
    const bool was_enforced = !record.has_enforced() || record.enforced();
    if (was_enforced != *enforced) return false;
  }
  if (until.has_value()) {
    absl::StatusOr<absl::Time> ts = ParseDecisionTime(record.ts());
    if (ts.ok() && *ts > *until) return false;
  }
  return true;
}

}  // namespace leash::controlplane
