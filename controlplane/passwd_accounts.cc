#include "controlplane/passwd_accounts.h"

#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
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
      accounts.push_back(Account{AccountNameAsText(entry->pw_name), entry->pw_uid, entry->pw_gid});
    }
  }
  endpwent();
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat(
        "reading the account database (getpwent) failed: ", std::strerror(error)));
  }
  return DistinctAgentAccounts(std::move(accounts));
}

std::string AccountNameAsText(absl::string_view name) {
  if (engine::IsValidUtf8(name) && name.find('\\') == absl::string_view::npos) {
    return std::string(name);
  }
  return engine::EscapeInvalidUtf8(absl::StrReplaceAll(name, {{"\\", "\\x5c"}}));
}

absl::StatusOr<std::vector<Account>> DistinctAgentAccounts(std::vector<Account> listed) {
  std::sort(listed.begin(), listed.end(), [](const Account& a, const Account& b) {
    return std::tie(a.name, a.uid) < std::tie(b.name, b.uid);
  });
  std::vector<Account> accounts;
  for (Account& account : listed) {
    if (!accounts.empty() && accounts.back().name == account.name) {
      if (accounts.back().uid == account.uid) continue;  // the same account from two sources
      return absl::FailedPreconditionError(absl::StrCat(
          "the account database lists ", account.name, " twice, as uid ", accounts.back().uid,
          " and as uid ", account.uid, ": an agent account needs one UID, or one of them is "
          "left unconfined; remove the duplicate (`getent passwd ", account.name,
          "` shows both)"));
    }
    accounts.push_back(std::move(account));
  }
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
