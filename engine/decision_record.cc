#include "engine/decision_record.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"
#include "engine/utf8.h"

namespace leash::engine {
namespace {

// `"key":`, after a comma unless it is the object's first field.
void AddKey(std::string& out, absl::string_view key, bool& first) {
  out += first ? "\"" : ",\"";
  first = false;
  out.append(key.data(), key.size());
  out += "\":";
}

// `"key":"value"`; proto3 JSON leaves default (empty) values out.
void AddString(std::string& out, absl::string_view key, absl::string_view value, bool& first) {
  if (value.empty()) return;
  AddKey(out, key, first);
  out += '"';
  out.append(value.data(), value.size());
  out += '"';
}

void AddNumber(std::string& out, absl::string_view key, uint32_t value, bool& first) {
  if (value == 0) return;
  AddKey(out, key, first);
  absl::StrAppend(&out, value);
}

// Calls visit(message, field, index) for every string field set in `message` and in the
// messages in it; `index` is -1 for a singular field. `visit` may change the string.
template <typename Visit>
void ForEachStringField(google::protobuf::Message& message, const Visit& visit) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? reflection.FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        visit(message, field, index);
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        ForEachStringField(index < 0 ? *reflection.MutableMessage(&message, field)
                                     : *reflection.MutableRepeatedMessage(&message, field, i),
                           visit);
      }
    }
  }
}

std::string StringField(const google::protobuf::Message& message,
                        const google::protobuf::FieldDescriptor* field, int index) {
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  return index < 0 ? reflection.GetString(message, field)
                   : reflection.GetRepeatedString(message, field, index);
}

}  // namespace

bool IsJsonPlain(absl::string_view text) {
  // One table lookup a byte: this runs over every path and reason the fanotify loop logs.
  static constexpr struct Table {
    bool plain[256] = {};
    constexpr Table() {
      for (int c = 0x20; c <= 0x7e; ++c) {
        plain[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != '=';
      }
    }
  } kTable;
  bool plain = true;
  for (const char c : text) plain &= kTable.plain[static_cast<unsigned char>(c)];
  return plain;
}

void DecisionSink::RecordLine(absl::FunctionRef<void(std::string&)> append_line) {
  std::string line;
  append_line(line);
  leash::v1::DecisionRecord record;
  if (!google::protobuf::util::JsonStringToMessage(line, &record).ok()) {
    // A renderer's bug: the record is not lost, it is kept as text and marked.
    record.Clear();
    record.set_action("unparsed");
    record.set_severity("critical");
    record.set_reason(absl::StrCat("decision line could not be read back: ", line));
  }
  Record(std::move(record));
}

std::string MakeRef(uint64_t random_bits) {
  static constexpr char kAlphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";  // no l, o, 0, 1
  std::string ref(8, 'a');
  for (char& c : ref) {
    c = kAlphabet[random_bits & 31];
    random_bits >>= 5;
  }
  return ref;
}

leash::v1::DecisionRecord MakeDecisionRecord(absl::Time ts, std::string ref, uint32_t uid,
                                             Surface surface, const Decision& decision,
                                             leash::v1::Subject subject) {
  leash::v1::DecisionRecord record;
  record.set_ts(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", ts, absl::UTCTimeZone()));
  record.set_ref(std::move(ref));
  record.set_uid(uid);
  record.set_surface(std::string(SurfaceName(surface)));
  record.set_action(std::string(VerdictName(decision.verdict)));
  record.set_reason(decision.reason);
  *record.mutable_subject() = std::move(subject);
  if (!decision.enforced) {
    record.set_enforced(false);
  } else if (decision.kept_under_audit) {
    record.set_enforced(true);  // rule L4: a block audit did not lift says so
  }
  return record;
}

std::string DecisionLine(const leash::v1::DecisionRecord& record) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // protobuf's printer drops the bytes of invalid UTF-8 without a word to the reader (and
  // complains on stderr): "/etc/shadow\xff" would be logged as "/etc/shadow". A file name is
  // any bytes, so those are shown instead, as the text \xNN. (This is the slow path already,
  // for text the fast renderers cannot copy as it is: a copy of the record costs little.)
  leash::v1::DecisionRecord printed = record;
  ForEachStringField(printed, [](google::protobuf::Message& message,
                                 const google::protobuf::FieldDescriptor* field, int index) {
    const std::string text = StringField(message, field, index);
    if (IsValidUtf8(text)) return;
    const google::protobuf::Reflection& reflection = *message.GetReflection();
    if (index < 0) {
      reflection.SetString(&message, field, EscapeInvalidUtf8(text));
    } else {
      reflection.SetRepeatedString(&message, field, index, EscapeInvalidUtf8(text));
    }
  });
  std::string line;
  if (!google::protobuf::util::MessageToJsonString(printed, &line, options).ok()) {
    line = absl::StrCat("{\"ref\":\"", record.ref(), "\",\"reason\":\"unrenderable\"}");
  }
  line.push_back('\n');
  return line;
}

void AppendDecisionLine(const leash::v1::DecisionRecord& r, std::string& out) {
  const leash::v1::Subject& s = r.subject();
  if (r.findings_size() > 0 || !IsJsonPlain(r.ts()) || !IsJsonPlain(r.ref()) ||
      !IsJsonPlain(r.surface()) || !IsJsonPlain(r.action()) || !IsJsonPlain(r.reason()) ||
      !IsJsonPlain(r.severity()) || !IsJsonPlain(r.outcome()) || !IsJsonPlain(s.domain()) ||
      !IsJsonPlain(s.ip()) ||
      !IsJsonPlain(s.path()) || !IsJsonPlain(s.binary()) || !IsJsonPlain(s.name()) ||
      !IsJsonPlain(s.inputs())) {
    out += DecisionLine(r);
    return;
  }
  out += '{';
  bool first = true;
  AddString(out, "ts", r.ts(), first);
  AddString(out, "ref", r.ref(), first);
  AddNumber(out, "uid", r.uid(), first);
  AddString(out, "surface", r.surface(), first);
  AddString(out, "action", r.action(), first);
  AddString(out, "reason", r.reason(), first);
  if (r.has_subject()) {
    AddKey(out, "subject", first);
    out += '{';
    bool inner = true;
    AddString(out, "domain", s.domain(), inner);
    AddString(out, "ip", s.ip(), inner);
    AddNumber(out, "port", s.port(), inner);
    AddString(out, "path", s.path(), inner);
    AddString(out, "binary", s.binary(), inner);
    AddString(out, "name", s.name(), inner);
    AddString(out, "inputs", s.inputs(), inner);
    out += '}';
  }
  AddString(out, "severity", r.severity(), first);
  AddString(out, "outcome", r.outcome(), first);
  if (r.has_enforced()) {
    AddKey(out, "enforced", first);
    out += r.enforced() ? "true" : "false";
  }
  out += "}\n";
}

void AppendDecisionLine(const FileDecisionFields& fields,
                        absl::FunctionRef<void(std::string&)> append_reason, std::string& out) {
  const size_t start = out.size();
  const absl::string_view surface = SurfaceName(fields.surface);
  const absl::string_view action = VerdictName(fields.verdict);
  out += '{';
  bool first = true;
  AddString(out, "ts", fields.ts, first);
  AddString(out, "ref", fields.ref, first);
  AddNumber(out, "uid", fields.uid, first);
  AddString(out, "surface", surface, first);
  AddString(out, "action", action, first);
  // The reason goes straight into the line; its key comes out again if it appended nothing.
  const size_t key_at = out.size();
  bool first_after_reason = first;
  AddKey(out, "reason", first_after_reason);
  out += '"';
  const size_t reason_at = out.size();
  append_reason(out);
  const size_t reason_len = out.size() - reason_at;
  if (reason_len == 0) {
    out.resize(key_at);
  } else {
    out += '"';
    first = first_after_reason;
  }
  const absl::string_view reason(out.data() + reason_at, reason_len);
  const bool binary = fields.surface == leash::v1::SURFACE_COMMANDS;
  if (!IsJsonPlain(fields.ts) || !IsJsonPlain(fields.ref) || !IsJsonPlain(reason) ||
      !IsJsonPlain(fields.path)) {
    leash::v1::DecisionRecord record;
    record.set_ts(std::string(fields.ts));
    record.set_ref(std::string(fields.ref));
    record.set_uid(fields.uid);
    record.set_surface(std::string(surface));
    record.set_action(std::string(action));
    record.set_reason(std::string(reason));
    leash::v1::Subject* subject = record.mutable_subject();
    if (!fields.path.empty()) {
      (binary ? subject->mutable_binary() : subject->mutable_path())
          ->assign(fields.path.data(), fields.path.size());
    }
    if (fields.critical) record.set_severity("critical");
    if (!fields.enforced) {
      record.set_enforced(false);
    } else if (fields.kept_under_audit) {
      record.set_enforced(true);
    }
    out.resize(start);
    out += DecisionLine(record);
    return;
  }
  AddKey(out, "subject", first);
  out += '{';
  bool inner = true;
  AddString(out, binary ? "binary" : "path", fields.path, inner);
  out += '}';
  if (fields.critical) AddString(out, "severity", "critical", first);
  if (!fields.enforced || fields.kept_under_audit) {
    AddKey(out, "enforced", first);
    out += fields.enforced ? "true" : "false";
  }
  out += "}\n";
}

}  // namespace leash::engine
