#include "tools_api/call_admission.h"

namespace leash::tools {

CallAdmission::CallAdmission(int max_calls_per_account, absl::Duration report_every)
    : max_calls_per_account_(max_calls_per_account), report_every_(report_every) {}

bool CallAdmission::Opened(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  Account& account = accounts_[uid];
  ++account.alive;
  return uid == 0 || account.alive <= max_alive();
}

void CallAdmission::Closed(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  auto it = accounts_.find(uid);
  if (it == accounts_.end() || it->second.alive == 0) return;
  --it->second.alive;
}

int CallAdmission::Alive(uint32_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = accounts_.find(uid);
  return it == accounts_.end() ? 0 : it->second.alive;
}

CallAdmission::Admission CallAdmission::Admit(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  Account& account = accounts_[uid];
  if (uid != 0 && account.in_flight >= max_calls_per_account_) {
    return ++account.refused_in_a_row > max_alive() ? Admission::kOverShareTooOften
                                                    : Admission::kOverShare;
  }
  account.refused_in_a_row = 0;
  ++account.in_flight;
  return Admission::kAdmitted;
}

void CallAdmission::Release(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  auto it = accounts_.find(uid);
  if (it == accounts_.end() || it->second.in_flight == 0) return;
  --it->second.in_flight;
}

int CallAdmission::InFlight(uint32_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = accounts_.find(uid);
  return it == accounts_.end() ? 0 : it->second.in_flight;
}

bool CallAdmission::ShouldReport(uint32_t uid, Event event, absl::Time now,
                                 uint64_t& unreported) {
  absl::MutexLock lock(&mu_);
  Account& account = accounts_[uid];
  Reports& reports = event == Event::kCut ? account.cut : account.refused;
  if (now - reports.last < report_every_) {
    ++reports.unreported;
    return false;
  }
  unreported = reports.unreported;
  reports.unreported = 0;
  reports.last = now;
  return true;
}

}  // namespace leash::tools
