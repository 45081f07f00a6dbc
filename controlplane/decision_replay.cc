#include "controlplane/decision_replay.h"

#include <cerrno>
#include <deque>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/rotated_log.h"

namespace leash::controlplane {
namespace {

// Calls `on_record` with every record line of `file` (lines that are not records are skipped)
// until it returns false. While `*needle` is not null, a line without its text is skipped
// unparsed (looking for a ref). Counts the lines read.
absl::Status ScanRecords(const base::LogFile& file, ReplayResult& result,
                         const std::function<bool(StreamedDecision&)>& on_record,
                         const std::string* const* needle = nullptr) {
  StreamedDecision decision;
  return base::ReadLogLines(file, [&](absl::string_view line) {
    ++result.lines_read;
    if (needle != nullptr && *needle != nullptr &&
        line.find(**needle) == absl::string_view::npos) {
      return true;
    }
    absl::StatusOr<leash::v1::DecisionRecord> record = ParseDecisionLine(line);
    if (!record.ok()) return true;
    decision.line.assign(line.data(), line.size());
    decision.record = *std::move(record);
    return on_record(decision);
  });
}

}  // namespace

absl::StatusOr<ReplayResult> ReplayDecisionLog(
    const std::string& path, const ReplayStart& start, const DecisionFilter& filter,
    const std::function<std::string(uint32_t)>& account_of,
    const std::function<bool(const StreamedDecision&)>& emit) {
  const std::vector<base::LogFile> files = base::LogRotations(path);
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat("cannot read the decision log ", path,
                                            ": neither it nor a rotation of it exists"));
  }
  ReplayResult result;
  bool stopped = false;
  // Emits `decision` when the filter takes it; false once the watcher went away.
  const auto offer = [&](StreamedDecision& decision) {
    decision.account = account_of(decision.record.uid());
    if (!filter.Matches(decision)) return true;
    ++result.emitted;
    if (!emit(decision)) stopped = true;
    return !stopped;
  };
  // Every record of files[from..] that `keep` takes, in file order.
  const auto emit_from = [&](size_t from, const std::function<bool(const StreamedDecision&)>& keep)
      -> absl::Status {
    for (size_t i = from; i < files.size() && !stopped; ++i) {
      absl::Status status = ScanRecords(files[i], result, [&](StreamedDecision& decision) {
        return !keep(decision) || offer(decision);
      });
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  };

  if (!start.ref.empty()) {
    // The ref is looked for from the newest file back: a recent ref is found without reading
    // the older rotations. Its file is read on from it, then every newer file whole.
    for (size_t i = files.size(); i-- > 0;) {
      bool found = false;
      // Until the ref's line, only lines holding its text are parsed.
      const std::string* needle = &start.ref;
      absl::Status status = ScanRecords(
          files[i], result,
          [&](StreamedDecision& decision) {
            if (!found) {
              if (decision.record.ref() != start.ref) return true;
              found = true;
              needle = nullptr;
            }
            return offer(decision);
          },
          &needle);
      if (!status.ok()) return status;
      if (found) {
        if (!stopped) {
          if (absl::Status rest = emit_from(i + 1, [](const StreamedDecision&) { return true; });
              !rest.ok()) {
            return rest;
          }
        }
        return result;
      }
    }
    result.ref_found = false;
    return result;
  }

  if (start.since.has_value()) {
    // The newest file that starts well before the start point holds it; older ones are not
    // read.
    const size_t from =
        base::FirstFileReaching(files, *start.since, [](absl::string_view line) {
          absl::StatusOr<leash::v1::DecisionRecord> record = ParseDecisionLine(line);
          if (!record.ok()) return std::optional<absl::Time>();
          absl::StatusOr<absl::Time> ts = ParseDecisionTime(record->ts());
          return ts.ok() ? std::optional<absl::Time>(*ts) : std::nullopt;
        });
    const absl::Time since = *start.since;
    if (absl::Status status = emit_from(from, [since](const StreamedDecision& decision) {
          absl::StatusOr<absl::Time> ts = ParseDecisionTime(decision.record.ts());
          return !ts.ok() || *ts >= since;
        });
        !status.ok()) {
      return status;
    }
    return result;
  }

  if (start.tail == 0) return result;
  // The last `tail` matching lines: from the newest file back, as many files as it takes.
  std::deque<StreamedDecision> last;
  for (size_t i = files.size(); i-- > 0 && last.size() < start.tail;) {
    std::deque<StreamedDecision> in_file;
    absl::Status status = ScanRecords(files[i], result, [&](StreamedDecision& decision) {
      decision.account = account_of(decision.record.uid());
      if (!filter.Matches(decision)) return true;
      in_file.push_back(decision);
      if (in_file.size() > start.tail - last.size()) in_file.pop_front();
      return true;
    });
    if (!status.ok()) return status;
    last.insert(last.begin(), in_file.begin(), in_file.end());
  }
  for (const StreamedDecision& d : last) {
    ++result.emitted;
    if (!emit(d)) return result;
  }
  return result;
}

}  // namespace leash::controlplane
