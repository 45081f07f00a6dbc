// The real AccountSource: the system account database through getpwent(3), so every NSS
// source the kernel's UIDs resolve through (files, sss, ldap ...) counts. Group membership is
// never read: Sentinel's sentinel-team-* groups are file access, not Leash policy.
#pragma once

#include "absl/synchronization/mutex.h"
#include "controlplane/account_source.h"
#include "controlplane/subordinate_ids.h"

namespace leash::controlplane {

// An account name as Leash shows and keys it: valid UTF-8 unchanged; otherwise every byte that
// is not valid UTF-8, and every backslash, written as \xNN. Escaping the backslash too keeps
// two different names apart: a byte 0xff and the four characters "\xff" never read the same.
std::string AccountNameAsText(absl::string_view name);

// The agent accounts as getpwent listed them, made into AccountSource's list: sorted by name,
// an entry listed twice (NSS sources overlapping) kept once. A name listed under two UIDs
// cannot be one subject (ports, bindings and status go by name): the lowest UID keeps the name
// and each other UID becomes a subject of its own named <name>~uid<N>, which no binding names,
// so the floor confines it. One UID under two names is one subject (the kernel knows the
// process by its UID), under the first name. Each such case adds a line to `warnings`.
std::vector<Account> DistinctAgentAccounts(std::vector<Account> listed,
                                           std::vector<std::string>& warnings);

class PasswdAccounts : public AccountSource {
 public:
  // The subordinate ID files read for every account listed or looked up (subordinate_ids.h).
  explicit PasswdAccounts(std::string subuid_path = kSubuidPath,
                          std::string subgid_path = kSubgidPath,
                          std::string nsswitch_path = kNsswitchPath)
      : subuid_path_(std::move(subuid_path)),
        subgid_path_(std::move(subgid_path)),
        nsswitch_path_(std::move(nsswitch_path)) {}

  // getpwent walks one process-wide cursor; calls are serialised.
  absl::StatusOr<std::vector<Account>> ListAgentAccounts() override;
  absl::StatusOr<std::optional<Account>> Lookup(absl::string_view name) override;
  absl::StatusOr<std::vector<Account>> AccountsWithUidIn(
      const std::vector<engine::UidRange>& uids) override;
  // getgrent(3), so every NSS source counts.
  absl::StatusOr<std::vector<Group>> GroupsWithGidIn(
      const std::vector<engine::UidRange>& gids) override;

 private:
  // Fills each account's subordinate ranges and problems from the two files, read now.
  absl::Status AddSubordinateIds(std::vector<Account>& accounts);

  const std::string subuid_path_;
  const std::string subgid_path_;
  const std::string nsswitch_path_;
  absl::Mutex mu_;
};

}  // namespace leash::controlplane
