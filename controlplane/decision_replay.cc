#include "controlplane/decision_replay.h"

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

absl::StatusOr<ReplayResult> ReplayDecisionLog(
    const std::string& path, const ReplayStart& start, const DecisionFilter& filter,
    const std::function<std::string(uint32_t)>& account_of,
    const std::function<bool(const StreamedDecision&)>& emit) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read the decision log ", path));
  }
  ReplayResult result;
  const bool from_ref = !start.ref.empty();
  const bool whole = from_ref || start.since.has_value();
  // With a ref, nothing is emitted before its line.
  bool started = !from_ref;
  std::deque<StreamedDecision> last;
  StreamedDecision decision;
  while (std::getline(file, decision.line)) {
    ++result.lines_read;
    if (!whole && start.tail == 0) break;
    absl::StatusOr<leash::v1::DecisionRecord> record = ParseDecisionLine(decision.line);
    if (!record.ok()) continue;
    if (!started) {
      if (record->ref() != start.ref) continue;
      started = true;
    }
    if (start.since.has_value() && !from_ref) {
      absl::StatusOr<absl::Time> ts = ParseDecisionTime(record->ts());
      if (ts.ok() && *ts < *start.since) continue;
    }
    decision.record = *std::move(record);
    decision.account = account_of(decision.record.uid());
    if (!filter.Matches(decision)) continue;
    if (whole) {
      ++result.emitted;
      if (!emit(decision)) return result;
    } else {
      last.push_back(decision);
      if (last.size() > start.tail) last.pop_front();
    }
  }
  for (const StreamedDecision& d : last) {
    ++result.emitted;
    if (!emit(d)) return result;
  }
  result.ref_found = started;
  return result;
}

}  // namespace leash::controlplane
