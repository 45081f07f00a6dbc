#include "controlplane/unbind_ledger.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace leash::controlplane {
namespace {

constexpr char kTimeFormat[] = "%Y-%m-%dT%H:%M:%E*SZ";
constexpr absl::string_view kKeys[] = {"time", "who", "kind", "scope", "profile", "acks"};
constexpr absl::string_view kKinds[] = {kLedgerUnbind, kLedgerBind, kLedgerProfileSave,
                                        kLedgerProfileDelete, kLedgerFloorEdit};

// `text` as a JSON string literal (quotes and escapes by protobuf's JSON printer).
std::string JsonString(const std::string& text) {
  google::protobuf::Value value;
  value.set_string_value(text);
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(value, &out).ok()) {
    // Only invalid UTF-8 can fail; keep the bytes visible rather than lose the record.
    value.set_string_value(absl::StrCat("(not UTF-8) ", absl::CHexEscape(text)));
    (void)google::protobuf::util::MessageToJsonString(value, &out);
  }
  return out;
}

absl::StatusOr<std::string> StringField(const google::protobuf::Struct& object,
                                        const std::string& key) {
  auto it = object.fields().find(key);
  if (it == object.fields().end()) {
    return absl::InvalidArgumentError(absl::StrCat("no \"", key, "\""));
  }
  if (it->second.kind_case() != google::protobuf::Value::kStringValue) {
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" is not a string"));
  }
  return it->second.string_value();
}

}  // namespace

std::string FormatUnbindRecord(const UnbindRecord& record) {
  std::vector<std::string> acks;
  for (const std::string& ack : record.acks) acks.push_back(JsonString(ack));
  return absl::StrCat(
      "{\"time\":", JsonString(absl::FormatTime(kTimeFormat, record.time, absl::UTCTimeZone())),
      ",\"who\":", JsonString(record.who), ",\"kind\":", JsonString(record.kind),
      ",\"scope\":", JsonString(record.scope),
      ",\"profile\":", JsonString(record.profile), ",\"acks\":[", absl::StrJoin(acks, ","),
      "]}\n");
}

absl::StatusOr<UnbindRecord> ParseUnbindRecord(absl::string_view line) {
  google::protobuf::Struct object;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      std::string(line.data(), line.size()), &object);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a JSON object: ", std::string(parsed.message())));
  }
  for (const auto& [key, value] : object.fields()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown key \"", key, "\""));
    }
  }
  UnbindRecord record;
  absl::StatusOr<std::string> time = StringField(object, "time");
  if (!time.ok()) return time.status();
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, *time, &record.time, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("\"time\" is not RFC 3339: ", error));
  }
  for (auto [key, out] : {std::pair<const char*, std::string*>{"who", &record.who},
                          {"scope", &record.scope},
                          {"profile", &record.profile}}) {
    absl::StatusOr<std::string> value = StringField(object, key);
    if (!value.ok()) return value.status();
    *out = *std::move(value);
  }
  if (object.fields().find("kind") != object.fields().end()) {
    absl::StatusOr<std::string> kind = StringField(object, "kind");
    if (!kind.ok()) return kind.status();
    if (std::find(std::begin(kKinds), std::end(kKinds), *kind) == std::end(kKinds)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown \"kind\" \"", *kind, "\""));
    }
    record.kind = *std::move(kind);
  }
  auto acks = object.fields().find("acks");
  if (acks == object.fields().end() ||
      acks->second.kind_case() != google::protobuf::Value::kListValue) {
    return absl::InvalidArgumentError("\"acks\" is missing or not a list");
  }
  for (const google::protobuf::Value& ack : acks->second.list_value().values()) {
    if (ack.kind_case() != google::protobuf::Value::kStringValue) {
      return absl::InvalidArgumentError("an ack is not a string");
    }
    record.acks.push_back(ack.string_value());
  }
  return record;
}

LedgerContents ParseLedger(absl::string_view content) {
  LedgerContents out;
  size_t offset = 0;
  size_t line_number = 0;
  while (offset < content.size()) {
    ++line_number;
    const size_t newline = content.find('\n', offset);
    const bool torn = newline == absl::string_view::npos;
    const absl::string_view line =
        content.substr(offset, torn ? absl::string_view::npos : newline - offset);
    if (torn) {
      out.torn_tail = true;
      out.problems.push_back({line_number, offset, true,
                              absl::StrCat("torn last line (", line.size(),
                                           " bytes with no newline): an append that did not "
                                           "finish; left as it is")});
      break;
    }
    if (line.empty()) {
      out.problems.push_back({line_number, offset, false, "empty line"});
    } else if (absl::StatusOr<UnbindRecord> record = ParseUnbindRecord(line); record.ok()) {
      out.records.push_back(*std::move(record));
    } else {
      out.problems.push_back({line_number, offset, false,
                              absl::StrCat("not a ledger record: ", record.status().message())});
    }
    offset = newline + 1;
  }
  return out;
}

absl::StatusOr<LedgerContents> UnbindLedger::Read() const {
  absl::StatusOr<std::string> content = base::ReadFile(path_);
  if (absl::IsNotFound(content.status())) return LedgerContents();
  if (!content.ok()) return content.status();
  return ParseLedger(*content);
}

absl::StatusOr<UnbindLedger::Appended> UnbindLedger::Append(const UnbindRecord& record) const {
  absl::StatusOr<LedgerContents> current = Read();
  if (!current.ok()) return current.status();
  Appended appended;
  std::string line = FormatUnbindRecord(record);
  if (current->torn_tail) {
    // Never rewrite or drop the torn bytes: start this record on a line of its own, so the torn
    // line stays exactly as it was, is reported by every reader, and this record stays whole.
    const LedgerProblem& torn = current->problems.back();
    appended.torn_notice = absl::StrCat(
        path_, " ended in a torn line (line ", torn.line, ", byte ", torn.offset,
        "): left as it is; this record starts on the next line");
    line.insert(0, "\n");
  }
  absl::Status status = base::AppendAndSync(path_, line, 0640);
  if (!status.ok()) return status;
  return appended;
}

}  // namespace leash::controlplane
