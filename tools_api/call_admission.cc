#include "tools_api/call_admission.h"

namespace leash::tools {

CallAdmission::CallAdmission(int max_calls_per_account, absl::Duration report_every)
    : max_calls_per_account_(max_calls_per_account), report_every_(report_every) {}

bool CallAdmission::Admit(uint32_t uid) {
  absl::MutexLock lock(&mu_);
  Account& account = accounts_[uid];
  if (uid != 0 && account.in_flight >= max_calls_per_account_) return false;
  ++account.in_flight;
  return true;
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

bool CallAdmission::ShouldReport(uint32_t uid, absl::Time now, uint64_t& unreported) {
  absl::MutexLock lock(&mu_);
  Account& account = accounts_[uid];
  if (now - account.last_report < report_every_) {
    ++account.unreported;
    return false;
  }
  unreported = account.unreported;
  account.unreported = 0;
  account.last_report = now;
  return true;
}

}  // namespace leash::tools
