#include "controlplane/watch_decisions.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controlplane/decision_replay.h"

namespace leash::controlplane {
namespace {

// A line written this long before the subscription may still have been in flight to the hub
// when the file was read: its ref is remembered so the live copy is not sent twice.
constexpr absl::Duration kInFlight = absl::Seconds(10);
// How often a follower with nothing to send looks whether its watcher is still there.
constexpr absl::Duration kCancelCheck = absl::Milliseconds(250);

leash::v1::WatchDecisionsEvent EventOf(const StreamedDecision& decision) {
  leash::v1::WatchDecisionsEvent event;
  event.set_line(decision.line);
  *event.mutable_record() = decision.record;
  event.set_account(decision.account);
  return event;
}

leash::v1::WatchDecisionsEvent Notice(std::string text) {
  leash::v1::WatchDecisionsEvent event;
  event.set_notice(std::move(text));
  return event;
}

}  // namespace

std::string TooManyWatchers() {
  return absl::StrCat("leashd already serves ", kMaxDecisionWatchers,
                      " decision watchers (leash logs), its limit; stop one (a `leash logs "
                      "--follow` elsewhere) and try again");
}

absl::Status ServeWatchDecisions(
    const leash::v1::WatchDecisionsRequest& request, const WatchDecisionsDeps& deps,
    const std::function<bool()>& cancelled,
    const std::function<bool(const leash::v1::WatchDecisionsEvent&)>& write) {
  absl::StatusOr<DecisionFilter> filter = FilterFromRequest(request);
  if (!filter.ok()) return filter.status();
  const bool follow = request.follow();
  if (!request.account().empty() && deps.is_subject && !deps.is_subject(request.account())) {
    // With follow the account may still come: the live lines name it once a reconcile has.
    const std::string text = absl::StrCat(
        "no subject of leashd is named '", request.account(),
        "', so no line matches --account (`leash status` lists the subjects: every leash-* "
        "account and the configured user)");
    if (!follow) return absl::NotFoundError(text);
    if (!write(Notice(text))) return absl::OkStatus();
  }
  ReplayStart start;
  start.ref = request.ref();
  start.tail = request.tail();
  if (!request.since().empty()) {
    absl::StatusOr<absl::Time> since = ParseDecisionTime(request.since());
    if (!since.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", since.status().message()));
    start.since = *since;
  }
  if (follow && deps.hub == nullptr) {
    return absl::UnavailableError("leashd has no live decision stream");
  }
  // Subscribed before the file is read, so nothing written in between is missed.
  std::shared_ptr<DecisionHub::Subscription> live;
  const absl::Time subscribed = absl::Now();
  if (follow) live = deps.hub->Subscribe(*filter);

  absl::flat_hash_set<std::string> replayed_recent;
  const bool wants_replay = !start.ref.empty() || start.since.has_value() || start.tail > 0;
  if (wants_replay && deps.log_path.empty()) {
    const std::string text =
        "the decision log goes to leashd's stdout: there is no file to replay (see journalctl "
        "-u leash.service)";
    if (!follow) return absl::FailedPreconditionError(text);
    if (!write(Notice(text))) return absl::OkStatus();
  } else if (wants_replay) {
    bool watcher_gone = false;
    absl::StatusOr<ReplayResult> replay = ReplayDecisionLog(
        deps.log_path, start, *filter, deps.account_of, [&](const StreamedDecision& decision) {
          if (follow) {
            absl::StatusOr<absl::Time> ts = ParseDecisionTime(decision.record.ts());
            if (!ts.ok() || *ts >= subscribed - kInFlight) {
              replayed_recent.insert(decision.record.ref());
            }
          }
          if (cancelled() || !write(EventOf(decision))) watcher_gone = true;
          return !watcher_gone;
        });
    if (watcher_gone) return absl::OkStatus();
    std::string problem;
    if (!replay.ok()) {
      problem = std::string(replay.status().message());
      if (!follow) return replay.status();
    } else if (!replay->ref_found) {
      problem = absl::StrCat("no line of ", deps.log_path, " has ref ", start.ref);
      if (!follow) return absl::NotFoundError(problem);
    }
    if (!problem.empty() && !write(Notice(problem))) return absl::OkStatus();
  }
  if (!follow) return absl::OkStatus();

  leash::v1::WatchDecisionsEvent live_mark;
  live_mark.set_live(true);
  if (!write(live_mark)) return absl::OkStatus();
  for (;;) {
    if (cancelled()) return absl::OkStatus();
    if (filter->until.has_value() && absl::Now() > *filter->until) return absl::OkStatus();
    DecisionHub::Subscription::Batch batch = live->Take(kCancelCheck);
    if (batch.dropped > 0) {
      leash::v1::WatchDecisionsEvent dropped = Notice(absl::StrCat(
          batch.dropped, " lines not sent: this watcher did not keep up (",
          live->dropped_total(), " since it started); the decision log has them"));
      dropped.set_dropped(batch.dropped);
      if (!write(dropped)) return absl::OkStatus();
    }
    for (const auto& decision : batch.decisions) {
      if (!replayed_recent.empty() && replayed_recent.erase(decision->record.ref()) > 0) continue;
      if (!write(EventOf(*decision))) return absl::OkStatus();
    }
  }
}

}  // namespace leash::controlplane
