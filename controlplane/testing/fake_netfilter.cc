#include "controlplane/testing/fake_netfilter.h"

#include <algorithm>

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace leash::controlplane::testing {

NetfilterSubject MakeSubject(uint32_t uid, uint16_t port, bool udp_allowed,
                             std::vector<engine::IpAddress> dns_resolvers) {
  NetfilterSubject subject;
  subject.uid = uid;
  subject.port = port;
  subject.udp_allowed = udp_allowed;
  subject.dns_resolvers = std::move(dns_resolvers);
  return subject;
}

std::string SubjectToString(const NetfilterSubject& subject) {
  return absl::StrCat(
      "uid=", subject.uid,
      subject.subordinate_uids.empty()
          ? ""
          : absl::StrCat(" subuids=[", engine::FormatUidRanges(subject.subordinate_uids), "]"),
      " port=", subject.port, " udp=", subject.udp_allowed ? "allow" : "drop",
      " dns=[",
      absl::StrJoin(subject.dns_resolvers, ",",
                    [](std::string* out, const engine::IpAddress& a) {
                      absl::StrAppend(out, engine::FormatIpAddress(a));
                    }),
      "]", subject.inbound_allowed ? " inbound=allow" : "");
}

std::string FakeNetfilter::Call::ToString() const {
  switch (kind) {
    case Kind::kPrepare:
      return "Prepare()";
    case Kind::kApply:
      return absl::StrCat("Apply(", SubjectToString(subjects.front()), ")");
    case Kind::kApplyAll:
      return absl::StrCat("ApplyAll(",
                          absl::StrJoin(subjects, "; ",
                                        [](std::string* out, const NetfilterSubject& s) {
                                          absl::StrAppend(out, SubjectToString(s));
                                        }),
                          ")");
    case Kind::kRelease:
      return absl::StrCat("Release(", uid, ")");
    case Kind::kListSubjects:
      return "ListSubjects()";
  }
  return "?";
}

absl::Status FakeNetfilter::TakeFailure(std::map<uint32_t, Failure>& failures, uint32_t key) {
  auto it = failures.find(key);
  if (it == failures.end()) return absl::OkStatus();
  absl::Status status = it->second.status;
  if (it->second.times > 0 && --it->second.times == 0) failures.erase(it);
  return status;
}

absl::StatusOr<std::vector<std::string>> FakeNetfilter::Prepare() {
  absl::MutexLock lock(&mu_);
  calls_.push_back({Call::Kind::kPrepare, {}, 0});
  if (absl::Status s = TakeFailure(prepare_failure_, 0); !s.ok()) return s;
  prepared_ = true;
  return std::exchange(prepare_lines_, {});
}

void FakeNetfilter::SetBeforeApply(std::function<void(const NetfilterSubject&)> hook) {
  before_apply_ = std::move(hook);
}

void FakeNetfilter::DropStaleClaims(const std::vector<NetfilterSubject>& incoming) {
  std::vector<engine::UidRange> claimed;
  std::set<uint32_t> in_batch;
  for (const NetfilterSubject& subject : incoming) {
    in_batch.insert(subject.uid);
    for (const engine::UidRange& range : DispatchedUids(subject)) claimed.push_back(range);
  }
  for (auto& [uid, present] : subjects_) {
    if (in_batch.count(uid) > 0) continue;
    present.subordinate_uids = engine::SubtractUidRanges(present.subordinate_uids, claimed);
  }
}

absl::Status FakeNetfilter::Apply(const NetfilterSubject& subject) {
  if (before_apply_) before_apply_(subject);
  absl::MutexLock lock(&mu_);
  calls_.push_back({Call::Kind::kApply, {subject}, 0});
  if (absl::Status s = ValidateNetfilterSubject(subject); !s.ok()) return s;
  if (!prepared_) {
    return absl::FailedPreconditionError(
        "table ip leash does not exist; Prepare() must run before the first subject is applied");
  }
  if (absl::Status s = TakeFailure(apply_failures_, subject.uid); !s.ok()) return s;
  DropStaleClaims({subject});
  subjects_[subject.uid] = subject;
  return absl::OkStatus();
}

absl::Status FakeNetfilter::ApplyAll(const std::vector<NetfilterSubject>& subjects) {
  if (before_apply_) {
    for (const NetfilterSubject& subject : subjects) before_apply_(subject);
  }
  absl::MutexLock lock(&mu_);
  calls_.push_back({Call::Kind::kApplyAll, subjects, 0});
  std::set<uint32_t> seen;
  for (const NetfilterSubject& subject : subjects) {
    if (absl::Status s = ValidateNetfilterSubject(subject); !s.ok()) return s;
    if (!seen.insert(subject.uid).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("UID ", subject.uid, " appears twice in one ApplyAll"));
    }
  }
  if (subjects.empty()) return absl::OkStatus();
  if (!prepared_) {
    return absl::FailedPreconditionError(
        "table ip leash does not exist; Prepare() must run before the first subject is applied");
  }
  // All or nothing, like one netlink batch.
  for (const NetfilterSubject& subject : subjects) {
    if (absl::Status s = TakeFailure(apply_failures_, subject.uid); !s.ok()) return s;
  }
  DropStaleClaims(subjects);
  for (const NetfilterSubject& subject : subjects) subjects_[subject.uid] = subject;
  return absl::OkStatus();
}

absl::Status FakeNetfilter::Release(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  calls_.push_back({Call::Kind::kRelease, {}, uid});
  if (absl::Status s = TakeFailure(release_failures_, uid); !s.ok()) return s;
  subjects_.erase(uid);
  return absl::OkStatus();
}

absl::StatusOr<NetfilterCounters> FakeNetfilter::ReadCounters(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  if (subjects_.count(uid) == 0) {
    return absl::NotFoundError(absl::StrCat("UID ", uid, " has no chain"));
  }
  auto it = counters_.find(uid);
  return it == counters_.end() ? NetfilterCounters{} : it->second;
}

void FakeNetfilter::SetCounters(uint32_t uid, NetfilterCounters counters) {
  absl::MutexLock lock(&mu_);
  counters_[uid] = counters;
}

absl::StatusOr<std::vector<uint32_t>> FakeNetfilter::ListSubjects() {
  absl::MutexLock lock(&mu_);
  calls_.push_back({Call::Kind::kListSubjects, {}, 0});
  if (absl::Status s = TakeFailure(list_failure_, 0); !s.ok()) return s;
  std::vector<uint32_t> uids;
  for (const auto& [uid, subject] : subjects_) uids.push_back(uid);
  return uids;
}

std::map<uint32_t, NetfilterSubject> FakeNetfilter::subjects() const {
  absl::MutexLock lock(&mu_);
  return subjects_;
}

bool FakeNetfilter::prepared() const {
  absl::MutexLock lock(&mu_);
  return prepared_;
}

std::vector<FakeNetfilter::Call> FakeNetfilter::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::vector<std::string> FakeNetfilter::CallStrings() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const Call& call : calls_) out.push_back(call.ToString());
  return out;
}

std::vector<FakeNetfilter::Call> FakeNetfilter::CallsOf(Call::Kind kind) const {
  absl::MutexLock lock(&mu_);
  std::vector<Call> out;
  for (const Call& call : calls_) {
    if (call.kind == kind) out.push_back(call);
  }
  return out;
}

void FakeNetfilter::ClearCalls() {
  absl::MutexLock lock(&mu_);
  calls_.clear();
}

void FakeNetfilter::Seed(const NetfilterSubject& subject) {
  absl::MutexLock lock(&mu_);
  prepared_ = true;
  subjects_[subject.uid] = subject;
}

void FakeNetfilter::SetPrepareLines(std::vector<std::string> lines) {
  absl::MutexLock lock(&mu_);
  prepare_lines_ = std::move(lines);
}

void FakeNetfilter::FailApply(uint32_t uid, absl::Status status, int times) {
  absl::MutexLock lock(&mu_);
  apply_failures_[uid] = {std::move(status), times};
}

void FakeNetfilter::FailRelease(uint32_t uid, absl::Status status, int times) {
  absl::MutexLock lock(&mu_);
  release_failures_[uid] = {std::move(status), times};
}

void FakeNetfilter::FailPrepare(absl::Status status, int times) {
  absl::MutexLock lock(&mu_);
  prepare_failure_[0] = {std::move(status), times};
}

void FakeNetfilter::FailListSubjects(absl::Status status, int times) {
  absl::MutexLock lock(&mu_);
  list_failure_[0] = {std::move(status), times};
}

void FakeNetfilter::ClearFailures() {
  absl::MutexLock lock(&mu_);
  apply_failures_.clear();
  release_failures_.clear();
  prepare_failure_.clear();
  list_failure_.clear();
}

}  // namespace leash::controlplane::testing
