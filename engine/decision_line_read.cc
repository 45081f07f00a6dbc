#include "engine/decision_line_read.h"

#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/utf8.h"
#include "google/protobuf/util/json_util.h"

namespace leash::engine {
namespace {

// The hand reader: it takes only a line with no backslash (so no string holds an escape or a
// quote) and no '[' (no findings), and only the record's own keys; anything else returns false
// and goes to protobuf's parser.
class PlainLineReader {
 public:
  explicit PlainLineReader(absl::string_view line) : line_(line) {}

  bool Read(leash::v1::DecisionRecord& r) {
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
      if (key == "process") {
        leash::v1::Process& p = *r.mutable_process();
        return Object([&](absl::string_view inner) {
          if (inner == "pid") return Number(p, &leash::v1::Process::set_pid);
          if (inner == "ppid") return Number(p, &leash::v1::Process::set_ppid);
          std::string* field = inner == "exe"       ? p.mutable_exe()
                               : inner == "cmdline" ? p.mutable_cmdline()
                                                    : nullptr;
          return field != nullptr && String(*field);
        });
      }
      if (key == "enforced") {
        bool enforced = true;
        if (!Bool(enforced)) return false;
        r.set_enforced(enforced);
        return true;
      }
      std::string* field = key == "ts"         ? r.mutable_ts()
                           : key == "ref"      ? r.mutable_ref()
                           : key == "account"  ? r.mutable_account()
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
    if (!IsValidUtf8(text)) return false;
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

absl::StatusOr<leash::v1::DecisionRecord> ReadDecisionLine(absl::string_view line) {
  leash::v1::DecisionRecord record;
  if (line.find_first_of("\\[") == absl::string_view::npos) {
    if (PlainLineReader(line).Read(record)) return record;
    record.Clear();
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(line.data(), line.size()), &record, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a decision record: ", std::string(status.message())));
  }
  return record;
}

}  // namespace leash::engine
