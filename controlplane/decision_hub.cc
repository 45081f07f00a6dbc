#include "controlplane/decision_hub.h"

#include <optional>
#include <utility>

#include "absl/strings/str_split.h"

namespace leash::controlplane {

void DecisionHub::Subscription::Offer(
    const std::vector<std::shared_ptr<const StreamedDecision>>& decisions) {
  // Filtered before the lock: the filter is immutable, and the reader waits on this lock.
  std::vector<const std::shared_ptr<const StreamedDecision>*> matching;
  matching.reserve(decisions.size());
  for (const std::shared_ptr<const StreamedDecision>& d : decisions) {
    if (filter_.Matches(*d)) matching.push_back(&d);
  }
  if (matching.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const std::shared_ptr<const StreamedDecision>* d : matching) {
    if (queue_.size() >= capacity_) {
      ++dropped_;
      ++dropped_total_;
      continue;
    }
    queue_.push_back(*d);
  }
}

DecisionHub::Subscription::Batch DecisionHub::Subscription::Take(absl::Duration timeout) {
  Batch batch;
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &Subscription::Ready), timeout);
  batch.decisions.assign(queue_.begin(), queue_.end());
  queue_.clear();
  batch.dropped = dropped_;
  dropped_ = 0;
  return batch;
}

bool DecisionHub::Subscription::Ready() const { return !queue_.empty() || dropped_ > 0; }

uint64_t DecisionHub::Subscription::dropped_total() const {
  absl::MutexLock lock(&mu_);
  return dropped_total_;
}

DecisionHub::DecisionHub(std::function<std::string(uint32_t)> account_of, size_t capacity)
    : account_of_(std::move(account_of)), capacity_(capacity) {}

std::shared_ptr<DecisionHub::Subscription> DecisionHub::Subscribe(DecisionFilter filter) {
  auto subscription = std::make_shared<Subscription>(std::move(filter), capacity_);
  absl::MutexLock lock(&mu_);
  subscribers_.push_back(subscription);
  return subscription;
}

void DecisionHub::Publish(absl::string_view line) { PublishLines(line); }

void DecisionHub::PublishLines(absl::string_view lines) {
  const std::vector<absl::string_view> split = absl::StrSplit(lines, '\n', absl::SkipEmpty());
  if (split.empty()) return;
  std::vector<std::shared_ptr<Subscription>> live;
  {
    absl::MutexLock lock(&mu_);
    published_ += split.size();
    for (auto it = subscribers_.begin(); it != subscribers_.end();) {
      if (std::shared_ptr<Subscription> s = it->lock()) {
        live.push_back(std::move(s));
        ++it;
      } else {
        it = subscribers_.erase(it);
      }
    }
  }
  // Nobody watching: the lines are not even parsed.
  if (live.empty()) return;
  std::vector<std::shared_ptr<const StreamedDecision>> decisions;
  decisions.reserve(split.size());
  uint64_t unreadable = 0;
  // A batch is mostly one writer's lines for a few accounts: the last name is reused.
  std::optional<uint32_t> named_uid;
  std::string name;
  for (absl::string_view line : split) {
    absl::StatusOr<leash::v1::DecisionRecord> record = ParseDecisionLine(line);
    if (!record.ok()) {
      ++unreadable;
      continue;
    }
    auto decision = std::make_shared<StreamedDecision>();
    decision->line = std::string(line);
    if (named_uid != record->uid()) {
      named_uid = record->uid();
      name = account_of_(record->uid());
    }
    decision->account = name;
    decision->record = *std::move(record);
    decisions.push_back(std::move(decision));
  }
  if (unreadable > 0) {
    absl::MutexLock lock(&mu_);
    unreadable_ += unreadable;
  }
  if (decisions.empty()) return;
  for (const std::shared_ptr<Subscription>& s : live) s->Offer(decisions);
}

uint64_t DecisionHub::published() const {
  absl::MutexLock lock(&mu_);
  return published_;
}

uint64_t DecisionHub::unreadable() const {
  absl::MutexLock lock(&mu_);
  return unreadable_;
}

}  // namespace leash::controlplane
