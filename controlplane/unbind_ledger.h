// The consent ledger, /var/lib/leash/unbinds.jsonl (the name it had when only unbinds wrote
// it, kept so that every record, old and new, is in one file): the consent a write took that
// does not live on a binding. An unbind deletes the binding its acks would have lived on; a
// rebind, a profile save or delete and a global bind take consent for the change itself (each
// reached subject resolved before and after, engine/change_consent.h). Append-only, one JSON
// object a line: {"time","who","kind","scope","profile","acks"} ("kind" absent: an unbind,
// as every line written before other writes recorded here).
//
// API (for BindingStore's writes and leashd's validate/status):
//   FormatUnbindRecord / ParseUnbindRecord   one line <-> UnbindRecord (pure; fuzzed).
//   ParseLedger(content)                     every record, and every line that is not one —
//                                            a torn last line (no newline) is reported as
//                                            torn, never silently dropped.
//   UnbindLedger::Append                     one write(2) + fsync (atomic_file AppendAndSync),
//                                            made before the change is written.
//
// A write's consent goes to this append-only ledger before the change, and a write whose
// record cannot be written does not happen (docs/ARCHITECTURE.md, rules P6 and P12).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leash::controlplane {

inline constexpr absl::string_view kUnbindLedgerName = "unbinds.jsonl";

// The write a record is for ("kind").
inline constexpr absl::string_view kLedgerUnbind = "unbind";
inline constexpr absl::string_view kLedgerBind = "bind";
inline constexpr absl::string_view kLedgerProfileSave = "profile-save";
inline constexpr absl::string_view kLedgerProfileDelete = "profile-delete";
inline constexpr absl::string_view kLedgerFloorEdit = "floor-edit";

struct UnbindRecord {
  absl::Time time;
  // Who asked: e.g. "uid 0 (root)"; the caller's identity as the admin socket saw it.
  std::string who;
  std::string scope;
  std::string profile;
  // The consent the write needed, "<field>:<value>" each ("agent:<account>=<field>:<value>"
  // for a profile save).
  std::vector<std::string> acks;
  // The write: kLedgerUnbind, kLedgerBind, ... (an old line without "kind" is an unbind).
  std::string kind = std::string(kLedgerUnbind);
  bool operator==(const UnbindRecord& other) const {
    return time == other.time && who == other.who && scope == other.scope &&
           profile == other.profile && acks == other.acks && kind == other.kind;
  }
};

// One JSON object and a trailing '\n'. The time is RFC 3339 in UTC with nanoseconds.
std::string FormatUnbindRecord(const UnbindRecord& record);

// Parses one line (without its '\n'). InvalidArgument for anything that is not exactly a
// record: not JSON, a missing or unknown key, a wrong type, a bad time, an unknown kind.
absl::StatusOr<UnbindRecord> ParseUnbindRecord(absl::string_view line);

struct LedgerProblem {
  // 1-based line number and the byte offset where the line starts.
  size_t line = 0;
  size_t offset = 0;
  // True for the last line when the file does not end in '\n' (a write that did not finish).
  bool torn = false;
  std::string reason;
};

struct LedgerContents {
  std::vector<UnbindRecord> records;
  std::vector<LedgerProblem> problems;
  // Whether the content ends in a torn line (an append must then start on a new line).
  bool torn_tail = false;
};

// Every record of `content`, and every line that is not one. Nothing is skipped silently.
LedgerContents ParseLedger(absl::string_view content);

class UnbindLedger {
 public:
  explicit UnbindLedger(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // The ledger as it is on disk; an absent file is an empty ledger. I/O errors carry errno
  // and the path.
  absl::StatusOr<LedgerContents> Read() const;

  struct Appended {
    // Set when the file ended in a torn line: the record was written on a line of its own and
    // the torn bytes were left exactly as they are. Says where, for the operator.
    std::string torn_notice;
  };

  // Appends `record` and fsyncs it. Callers hold the bindings writer lock (the one writer).
  // An error means the record may not be durable: the caller must not remove the binding.
  absl::StatusOr<Appended> Append(const UnbindRecord& record) const;

 private:
  std::string path_;
};

}  // namespace leash::controlplane
