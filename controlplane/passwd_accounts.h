// The real AccountSource: the system account database through getpwent(3), so every NSS
// source the kernel's UIDs resolve through (files, sss, ldap ...) counts. Group membership is
// never read: Sentinel's sentinel-team-* groups are file access, not Leash policy.
#pragma once

#include "absl/synchronization/mutex.h"
#include "controlplane/account_source.h"

namespace leash::controlplane {

class PasswdAccounts : public AccountSource {
 public:
  // getpwent walks one process-wide cursor; calls are serialised.
  absl::StatusOr<std::vector<Account>> ListAgentAccounts() override;
  absl::StatusOr<std::optional<Account>> Lookup(absl::string_view name) override;

 private:
  absl::Mutex mu_;
};

}  // namespace leash::controlplane
