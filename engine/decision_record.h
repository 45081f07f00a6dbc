// The decision log's record: building it from a decision, rendering it as the one JSON line
// the log holds, the short ref that ties a block back to that line, and the sink every
// enforcer hands records to.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/decision.h"
#include "leash/v1/decision.pb.h"

namespace leash::engine {

// The uid a record carries when no account can be named for it ((uid_t)-1, which no account
// has): a caller that could not be identified, an event whose process is unknown, a record
// about the log itself. Never 0, which reads as root.
inline constexpr uint32_t kUnknownUid = 0xFFFFFFFFu;

// The `account` a line carries for `uid`: `name` when the writer knows one (a subject's
// account; a subordinate UID's owner), "root" for 0, and "uid:<n>" otherwise (a UID no subject
// has, or kUnknownUid: then "uid:4294967295"). A colon is in no account name (it separates the
// fields of /etc/passwd), so the last form is never mistaken for one. Never looks anything up.
std::string AccountLabel(uint32_t uid, absl::string_view name);

// Where enforcers send decision records. Implementations must never block the caller: a
// decision is answered first and logged after, and a full log loses records (counting them)
// rather than delaying an answer. Thread-safe.
class DecisionSink {
 public:
  virtual ~DecisionSink() = default;
  virtual void Record(leash::v1::DecisionRecord record) = 0;

  // The same for a hot path that renders its own line (AppendDecisionLine below):
  // `append_line` appends exactly one record's line, ending in '\n', to the string it is
  // handed. A sink may hand it the queue slot the line is written from
  // (sidecar::AsyncDecisionLog), so the fanotify loop builds no record and copies nothing.
  // `append_line` must be quick and must not call the sink. By default the line is read back
  // into a record and passed to Record().
  virtual void RecordLine(absl::FunctionRef<void(std::string&)> append_line);
  // The same, saying what the line is about, so that a sink that has to drop it can say what
  // it lost. Default: RecordLine(append_line).
  virtual void RecordLine(Surface /*surface*/, Verdict /*verdict*/,
                          absl::FunctionRef<void(std::string&)> append_line) {
    RecordLine(append_line);
  }

  // The `account` a line names for `uid`, for a caller that renders its own line: the sink's
  // names of its subjects' accounts. Must not block. Default: AccountLabel(uid, "").
  virtual std::string AccountOf(uint32_t uid) { return AccountLabel(uid, ""); }

  // Whether `uid`'s line for a decision of this kind is written now: a sink may apply the
  // subject's logging.level and a limit on allow lines. A caller that renders its own line
  // (RecordLine) asks first; Record() applies it to the record itself. Default: every line.
  virtual bool Admits(uint32_t /*uid*/, Verdict /*verdict*/, bool /*critical*/) { return true; }
};

// A short reference ("k3x9q2mw"): 8 characters of lowercase base32 from `random_bits`. The
// caller supplies the randomness (the engine makes no syscalls).
std::string MakeRef(uint64_t random_bits);

// {ts, ref, uid, surface, action, reason, subject}, and `enforced: false` for a block the
// decision says was not enforced (audit), `enforced: true` for one audit did not lift (rule L4). The subject's fields are set by the caller (only
// those of the decision's surface).
leash::v1::DecisionRecord MakeDecisionRecord(absl::Time ts, std::string ref, uint32_t uid,
                                             Surface surface, const Decision& decision,
                                             leash::v1::Subject subject);

// The record as one line of JSON ending in '\n', fields in the order of rule L1
// (docs/ARCHITECTURE.md): ts, ref, uid, account, surface, action, reason, subject, process,
// severity, findings, outcome, enforced. `uid` is written whenever it is set (0 included);
// other empty fields are left out. Each string is written as protobuf's JSON printer writes
// it, so every JSON reader (and protobuf's parser) reads the line back; text that is not
// UTF-8 shows its bytes as \xNN (engine/utf8.h EscapeInvalidUtf8). Never fails: a record that
// cannot be rendered still yields a line carrying its ref and "unrenderable".
std::string DecisionLine(const leash::v1::DecisionRecord& record);

// Appends DecisionLine(record) to `out`. Text that is IsJsonPlain (every string an enforcer
// writes on its hot path) is copied as it is; only the rest goes through protobuf's printer.
void AppendDecisionLine(const leash::v1::DecisionRecord& record, std::string& out);

// The acting process of a line, as views (leash.v1.Process). Zero and empty fields are left
// out of the line.
struct ProcessFields {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  absl::string_view exe;
  absl::string_view cmdline;
};

// A filesystem or commands record as the fanotify loop has it: views, nothing copied yet.
struct FileDecisionFields {
  absl::string_view ts;  // formatted as MakeDecisionRecord does
  absl::string_view ref;
  uint32_t uid = 0;
  absl::string_view account;  // the record's `account`
  Surface surface = leash::v1::SURFACE_FILESYSTEM;
  Verdict verdict = Verdict::kBlock;
  // subject.binary for SURFACE_COMMANDS, subject.path otherwise; the subject is present even
  // when this is empty.
  absl::string_view path;
  bool critical = false;  // severity "critical"
  bool enforced = true;   // false: a block an audited surface logged and did not make
  // A block on an audited surface that audit did not lift (rule L4): enforced: true written.
  bool kept_under_audit = false;
  // The acting process, where the caller read it; null leaves `process` out.
  const ProcessFields* process = nullptr;
};

// Appends the line of the record `fields` describe, with the reason `append_reason` appends,
// exactly as DecisionLine would render that record, without building it: the reason is
// written straight into the line (and written again through the printer only when it is not
// IsJsonPlain).
void AppendDecisionLine(const FileDecisionFields& fields,
                        absl::FunctionRef<void(std::string&)> append_reason, std::string& out);

// Whether protobuf's JSON printer writes `text` between quotes as it is: printable ASCII
// without the characters it escapes (or may: '<', '>', '&', '=').
bool IsJsonPlain(absl::string_view text);

}  // namespace leash::engine
