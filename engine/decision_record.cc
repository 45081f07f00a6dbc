#include "engine/decision_record.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/wrappers.pb.h"
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

// `text` between quotes, exactly as protobuf's JSON printer writes a string field: as it is
// when IsJsonPlain (every line an enforcer writes on its hot path), else through the printer
// itself (as a StringValue, whose JSON is the quoted string), its invalid UTF-8 first shown as
// \xNN (engine/utf8.h). Returns false only if the printer refuses, which valid UTF-8 never
// makes it do.
bool AppendJsonString(std::string& out, absl::string_view text) {
  if (IsJsonPlain(text)) {
    out += '"';
    out.append(text.data(), text.size());
    out += '"';
    return true;
  }
  google::protobuf::StringValue value;
  // protobuf's printer drops the bytes of invalid UTF-8 without a word to the reader:
  // "/etc/shadow\xff" would be logged as "/etc/shadow". A file name is any bytes.
  value.set_value(IsValidUtf8(text) ? std::string(text) : EscapeInvalidUtf8(text));
  std::string quoted;
  if (!google::protobuf::util::MessageToJsonString(value, &quoted).ok()) return false;
  out += quoted;
  return true;
}

// `"key":"value"`; proto3 JSON leaves default (empty) values out.
bool AddString(std::string& out, absl::string_view key, absl::string_view value, bool& first) {
  if (value.empty()) return true;
  AddKey(out, key, first);
  return AppendJsonString(out, value);
}

void AddNumber(std::string& out, absl::string_view key, uint32_t value, bool& first) {
  if (value == 0) return;
  AddKey(out, key, first);
  absl::StrAppend(&out, value);
}

// `"uid":N`, 0 included: every line names its UID.
void AddUid(std::string& out, uint32_t uid, bool& first) {
  AddKey(out, "uid", first);
  absl::StrAppend(&out, uid);
}

bool AddProcess(std::string& out, const ProcessFields& p, bool& first) {
  AddKey(out, "process", first);
  out += '{';
  bool inner = true;
  AddNumber(out, "pid", p.pid, inner);
  AddNumber(out, "ppid", p.ppid, inner);
  const bool ok = AddString(out, "exe", p.exe, inner) && AddString(out, "cmdline", p.cmdline, inner);
  out += '}';
  return ok;
}

// The whole line of `r`, in the order of rule L1 (docs/ARCHITECTURE.md). False if a string
// could not be rendered.
bool RenderRecord(const leash::v1::DecisionRecord& r, std::string& out) {
  bool ok = true;
  out += '{';
  bool first = true;
  ok &= AddString(out, "ts", r.ts(), first);
  ok &= AddString(out, "ref", r.ref(), first);
  if (r.has_uid()) AddUid(out, r.uid(), first);
  ok &= AddString(out, "account", r.account(), first);
  ok &= AddString(out, "surface", r.surface(), first);
  ok &= AddString(out, "action", r.action(), first);
  ok &= AddString(out, "reason", r.reason(), first);
  if (r.has_subject()) {
    const leash::v1::Subject& s = r.subject();
    AddKey(out, "subject", first);
    out += '{';
    bool inner = true;
    ok &= AddString(out, "domain", s.domain(), inner);
    ok &= AddString(out, "ip", s.ip(), inner);
    AddNumber(out, "port", s.port(), inner);
    ok &= AddString(out, "path", s.path(), inner);
    ok &= AddString(out, "binary", s.binary(), inner);
    ok &= AddString(out, "name", s.name(), inner);
    ok &= AddString(out, "inputs", s.inputs(), inner);
    out += '}';
  }
  if (r.has_process()) {
    const leash::v1::Process& p = r.process();
    ok &= AddProcess(out, ProcessFields{p.pid(), p.ppid(), p.exe(), p.cmdline()}, first);
  }
  ok &= AddString(out, "severity", r.severity(), first);
  if (r.findings_size() > 0) {
    AddKey(out, "findings", first);
    out += '[';
    for (int i = 0; i < r.findings_size(); ++i) {
      const leash::v1::ToolFinding& f = r.findings(i);
      if (i > 0) out += ',';
      out += '{';
      bool inner = true;
      ok &= AddString(out, "category", f.category(), inner);
      ok &= AddString(out, "detector", f.detector(), inner);
      ok &= AddString(out, "json_path", f.json_path(), inner);
      ok &= AddString(out, "masked", f.masked(), inner);
      out += '}';
    }
    out += ']';
  }
  ok &= AddString(out, "outcome", r.outcome(), first);
  if (r.has_enforced()) {
    AddKey(out, "enforced", first);
    out += r.enforced() ? "true" : "false";
  }
  out += "}\n";
  return ok;
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

std::string AccountLabel(uint32_t uid, absl::string_view name) {
  if (!name.empty()) return std::string(name);
  if (uid == 0) return "root";
  return absl::StrCat("uid:", uid);
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
  std::string line;
  AppendDecisionLine(record, line);
  return line;
}

void AppendDecisionLine(const leash::v1::DecisionRecord& record, std::string& out) {
  const size_t start = out.size();
  if (!RenderRecord(record, out)) {
    out.resize(start);
    leash::v1::DecisionRecord fallback;
    fallback.set_ref(record.ref());
    fallback.set_reason("unrenderable");
    RenderRecord(fallback, out);
  }
}

void AppendDecisionLine(const FileDecisionFields& fields,
                        absl::FunctionRef<void(std::string&)> append_reason, std::string& out) {
  const size_t start = out.size();
  bool ok = true;
  out += '{';
  bool first = true;
  ok &= AddString(out, "ts", fields.ts, first);
  ok &= AddString(out, "ref", fields.ref, first);
  AddUid(out, fields.uid, first);
  ok &= AddString(out, "account", fields.account, first);
  ok &= AddString(out, "surface", SurfaceName(fields.surface), first);
  ok &= AddString(out, "action", VerdictName(fields.verdict), first);
  // The reason goes straight into the line; its key comes out again if it appended nothing,
  // and a reason that is not plain is taken out and written again through the printer.
  const size_t key_at = out.size();
  bool first_after_reason = first;
  AddKey(out, "reason", first_after_reason);
  const size_t reason_at = out.size() + 1;
  out += '"';
  append_reason(out);
  const size_t reason_len = out.size() - reason_at;
  if (reason_len == 0) {
    out.resize(key_at);
  } else if (IsJsonPlain(absl::string_view(out).substr(reason_at))) {
    out += '"';
    first = first_after_reason;
  } else {
    const std::string reason = out.substr(reason_at);
    out.resize(reason_at - 1);
    ok &= AppendJsonString(out, reason);
    first = first_after_reason;
  }
  AddKey(out, "subject", first);
  out += '{';
  bool inner = true;
  ok &= AddString(out, fields.surface == leash::v1::SURFACE_COMMANDS ? "binary" : "path",
                  fields.path, inner);
  out += '}';
  if (fields.process != nullptr) ok &= AddProcess(out, *fields.process, first);
  if (fields.critical) AddString(out, "severity", "critical", first);
  if (!fields.enforced || fields.kept_under_audit) {
    AddKey(out, "enforced", first);
    out += fields.enforced ? "true" : "false";
  }
  out += "}\n";
  if (!ok) {
    out.resize(start);
    leash::v1::DecisionRecord fallback;
    fallback.set_ref(std::string(fields.ref));
    fallback.set_reason("unrenderable");
    RenderRecord(fallback, out);
  }
}

}  // namespace leash::engine
