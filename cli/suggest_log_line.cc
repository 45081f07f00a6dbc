#include "cli/suggest_log_line.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/utf8.h"
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

// A reader for the lines the writers' fast renderers produce (engine::AppendDecisionLine): a
// flat object, one nested "subject", strings written as their bytes. It takes only a line with
// no backslash (so no string holds an escape or a quote) and no '[' (no findings), and only the
// record's own keys; anything else returns false and goes to protobuf's parser, which reads
// every line. It is here because protobuf's JSON parser costs tens of microseconds a line,
// and a log holds millions.
class PlainLineReader {
 public:
  explicit PlainLineReader(absl::string_view line) : line_(line) {}

  bool Read(LoggedDecision& out) {
    leash::v1::DecisionRecord& r = out.record;
    return Object([&](absl::string_view key) {
      if (key == "subject") {
        leash::v1::Subject& s = *r.mutable_subject();
        return Object([&](absl::string_view inner) {
          if (inner == "port") return Number(s, &leash::v1::Subject::set_port);
          std::string* field = inner == "domain"   ? s.mutable_domain()
                               : inner == "ip"     ? s.mutable_ip()
                               : inner == "path"   ? s.mutable_path()
                               : inner == "binary" ? s.mutable_binary()
                               : inner == "name"   ? s.mutable_name()
                               : inner == "inputs" ? s.mutable_inputs()
                                                   : nullptr;
          return field != nullptr && String(*field);
        });
      }
      if (key == "uid") return Number(r, &leash::v1::DecisionRecord::set_uid);
      if (key == "enforced") return Bool(out.enforced);
      std::string* field = key == "ts"         ? r.mutable_ts()
                           : key == "ref"      ? r.mutable_ref()
                           : key == "surface"  ? r.mutable_surface()
                           : key == "action"   ? r.mutable_action()
                           : key == "reason"   ? r.mutable_reason()
                           : key == "severity" ? r.mutable_severity()
                           : key == "outcome"  ? r.mutable_outcome()
                                               : nullptr;
      return field != nullptr && String(*field);
    }) && at_ == line_.size();
  }

 private:
  bool Take(char c) {
    if (at_ >= line_.size() || line_[at_] != c) return false;
    ++at_;
    return true;
  }
  bool String(std::string& into) {
    if (!Take('"')) return false;
    const size_t end = line_.find('"', at_);
    if (end == absl::string_view::npos) return false;
    const absl::string_view text = line_.substr(at_, end - at_);
    // JSON text is UTF-8 (the writers escape any other byte as \xNN): a line that is not is
    // protobuf's to refuse.
    if (!engine::IsValidUtf8(text)) return false;
    into.assign(text.data(), text.size());
    at_ = end + 1;
    return true;
  }
  template <typename Message, typename Setter>
  bool Number(Message& message, Setter setter) {
    const size_t start = at_;
    while (at_ < line_.size() && absl::ascii_isdigit(static_cast<unsigned char>(line_[at_]))) {
      ++at_;
    }
    uint32_t value = 0;
    if (!absl::SimpleAtoi(line_.substr(start, at_ - start), &value)) return false;
    (message.*setter)(value);
    return true;
  }
  bool Bool(bool& into) {
    if (absl::StartsWith(line_.substr(at_), "true")) {
      into = true;
      at_ += 4;
      return true;
    }
    if (absl::StartsWith(line_.substr(at_), "false")) {
      into = false;
      at_ += 5;
      return true;
    }
    return false;
  }
  // {"key":<value>,...}, each value read by `value(key)`.
  template <typename Value>
  bool Object(const Value& value) {
    if (!Take('{')) return false;
    if (Take('}')) return true;
    do {
      std::string key;
      if (!String(key) || !Take(':') || !value(key)) return false;
    } while (Take(','));
    return Take('}');
  }

  absl::string_view line_;
  size_t at_ = 0;
};

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
  LoggedDecision decision;
  if (line.find_first_of("\\[") == absl::string_view::npos) {
    if (PlainLineReader(line).Read(decision)) return decision;
    decision = LoggedDecision();
  }
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
