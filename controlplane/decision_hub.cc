#include "controlplane/decision_hub.h"

#include <utility>

namespace leash::controlplane {

void DecisionHub::Subscription::Offer(const std::shared_ptr<const StreamedDecision>& decision) {
  if (!filter_.Matches(*decision)) return;
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= capacity_) {
    ++dropped_;
    ++dropped_total_;
    return;
  }
  queue_.push_back(decision);
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

void DecisionHub::Publish(absl::string_view line) {
  std::vector<std::shared_ptr<Subscription>> live;
  {
    absl::MutexLock lock(&mu_);
    ++published_;
    for (auto it = subscribers_.begin(); it != subscribers_.end();) {
      if (std::shared_ptr<Subscription> s = it->lock()) {
        live.push_back(std::move(s));
        ++it;
      } else {
        it = subscribers_.erase(it);
      }
    }
  }
  // Nobody watching: the line is not even parsed.
  if (live.empty()) return;
  absl::StatusOr<leash::v1::DecisionRecord> record = ParseDecisionLine(line);
  if (!record.ok()) {
    absl::MutexLock lock(&mu_);
    ++unreadable_;
    return;
  }
  auto decision = std::make_shared<StreamedDecision>();
  decision->line = std::string(line);
  decision->account = account_of_(record->uid());
  decision->record = *std::move(record);
  for (const std::shared_ptr<Subscription>& s : live) s->Offer(decision);
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
