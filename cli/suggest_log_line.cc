#include "cli/suggest_log_line.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

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
  if (at == absl::string_view::npos || line[at] != '"') return {};
  const size_t end = line.find('"', at + 1);
  if (end == absl::string_view::npos) return {};
  return line.substr(at + 1, end - at - 1);
}

absl::StatusOr<LoggedDecision> ParseLoggedDecision(absl::string_view line) {
  LoggedDecision decision;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const google::protobuf::StringPiece text(line.data(), line.size());
  const auto parsed = google::protobuf::util::JsonStringToMessage(text, &decision.record, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a decision record: ", parsed.ToString()));
  }
  // Only audited lines carry the field: read it with protobuf's generic form, not by hand.
  if (absl::StrContains(line, "\"enforced\"")) {
    google::protobuf::Struct fields;
    if (google::protobuf::util::JsonStringToMessage(text, &fields, options).ok()) {
      auto it = fields.fields().find("enforced");
      if (it != fields.fields().end() &&
          it->second.kind_case() == google::protobuf::Value::kBoolValue) {
        decision.enforced = it->second.bool_value();
      }
    }
  }
  return decision;
}

}  // namespace leash::cli
