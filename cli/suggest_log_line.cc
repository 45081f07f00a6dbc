#include "cli/suggest_log_line.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "engine/decision_line_read.h"

namespace leash::cli {
namespace {

// The text after the first `"<key>":` (spaces skipped), or npos.
size_t ValueAt(absl::string_view line, absl::string_view quoted_key) {
  size_t at = line.find(quoted_key);
  if (at == absl::string_view::npos) return at;
  at += quoted_key.size();
  while (at < line.size() && line[at] == ' ') ++at;
  if (at >= line.size() || line[at] != ':') return absl::string_view::npos;
  ++at;
  while (at < line.size() && line[at] == ' ') ++at;
  return at;
}

}  // namespace

std::optional<uint32_t> PeekUid(absl::string_view line) {
  const size_t at = ValueAt(line, "\"uid\"");
  if (at == absl::string_view::npos) return 0u;
  size_t end = at;
  while (end < line.size() && absl::ascii_isdigit(static_cast<unsigned char>(line[end]))) ++end;
  uint32_t uid = 0;
  if (!absl::SimpleAtoi(line.substr(at, end - at), &uid)) return std::nullopt;
  return uid;
}

absl::string_view PeekTs(absl::string_view line) {
  const size_t at = ValueAt(line, "\"ts\"");
  // npos when absent, size() when the line ends after the colon.
  if (at >= line.size() || line[at] != '"') return {};
  const size_t end = line.find('"', at + 1);
  if (end == absl::string_view::npos) return {};
  return line.substr(at + 1, end - at - 1);
}

absl::StatusOr<LoggedDecision> ParseLoggedDecision(absl::string_view line) {
  absl::StatusOr<leash::v1::DecisionRecord> record = engine::ReadDecisionLine(line);
  if (!record.ok()) return record.status();
  LoggedDecision decision;
  decision.enforced = !record->has_enforced() || record->enforced();
  decision.record = *std::move(record);
  return decision;
}

}  // namespace leash::cli
