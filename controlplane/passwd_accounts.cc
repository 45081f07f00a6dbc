#include "controlplane/passwd_accounts.h"

#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/utf8.h"

namespace leash::controlplane {

absl::StatusOr<std::vector<Account>> PasswdAccounts::ListAgentAccounts() {
  absl::MutexLock lock(&mu_);
  std::vector<Account> accounts;
  setpwent();
  int error = 0;
  while (true) {
    errno = 0;
    const passwd* entry = getpwent();
    if (entry == nullptr) {
      // End of the database leaves errno 0 (or ENOENT from some NSS modules); anything else
      // means the walk stopped early: "I could not look" must never read as "nobody".
      error = errno == ENOENT ? 0 : errno;
      break;
    }
    if (absl::StartsWith(entry->pw_name, kAgentAccountPrefix)) {
      accounts.push_back(
          Account{engine::EscapeInvalidUtf8(entry->pw_name), entry->pw_uid, entry->pw_gid});
    }
  }
  endpwent();
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat(
        "reading the account database (getpwent) failed: ", std::strerror(error)));
  }
  std::sort(accounts.begin(), accounts.end(),
            [](const Account& a, const Account& b) { return a.name < b.name; });
  // NSS may list a name twice (files and a directory service): keep the first.
  accounts.erase(std::unique(accounts.begin(), accounts.end(),
                             [](const Account& a, const Account& b) { return a.name == b.name; }),
                 accounts.end());
  return accounts;
}

absl::StatusOr<std::optional<Account>> PasswdAccounts::Lookup(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  std::vector<char> buffer(16384);
  passwd entry;
  passwd* result = nullptr;
  const std::string key(name);
  const int rc = getpwnam_r(key.c_str(), &entry, buffer.data(), buffer.size(), &result);
  if (rc != 0 && rc != ENOENT && rc != ESRCH) {
    return absl::UnavailableError(
        absl::StrCat("looking up account '", name, "' failed: ", std::strerror(rc)));
  }
  if (result == nullptr) return std::optional<Account>();
  return std::optional<Account>(Account{result->pw_name, result->pw_uid, result->pw_gid});
}

}  // namespace leash::controlplane
