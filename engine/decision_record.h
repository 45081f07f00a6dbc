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

// Where enforcers send decision records. Implementations must never block the caller: a
// decision is answered first and logged after, and a full log loses records (counting them)
// rather than delaying an answer. Thread-safe.
class DecisionSink {
 public:
  virtual ~DecisionSink() = default;
  virtual void Record(leash::v1::DecisionRecord record) = 0;

  // The same, with the record filled in place: `fill` is handed a cleared record and sets its
  // fields. A sink may hand it a record it reuses (sidecar::AsyncDecisionLog: its strings keep
  // their capacity), so a hot path (the fanotify loop) makes no allocation per record. `fill`
  // must be quick and must not call the sink. By default a fresh record is filled and passed
  // to Record().
  virtual void RecordWith(absl::FunctionRef<void(leash::v1::DecisionRecord&)> fill) {
    leash::v1::DecisionRecord record;
    fill(record);
    Record(std::move(record));
  }
};

// A short reference ("k3x9q2mw"): 8 characters of lowercase base32 from `random_bits`. The
// caller supplies the randomness (the engine makes no syscalls).
std::string MakeRef(uint64_t random_bits);

// {ts, ref, uid, surface, action, reason, subject}. The subject's fields are set by the caller
// (only those of the decision's surface).
leash::v1::DecisionRecord MakeDecisionRecord(absl::Time ts, std::string ref, uint32_t uid,
                                             Surface surface, const Decision& decision,
                                             leash::v1::Subject subject);

// The record as one line of JSON ending in '\n', fields in the spec's order of meaning;
// empty fields are left out. Never fails: a record that cannot be rendered still yields a
// line carrying its ref and "unrenderable".
std::string DecisionLine(const leash::v1::DecisionRecord& record);

}  // namespace leash::engine
