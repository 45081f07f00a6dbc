#include "controlplane/passwd_accounts.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
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
  std::vector<std::string> warnings;
  std::vector<Account> distinct = DistinctAgentAccounts(std::move(accounts), warnings);
  for (const std::string& warning : warnings) {
    std::fprintf(stderr, "leashd: warning: %s\n", warning.c_str());
  }
  if (absl::Status read = AddSubordinateIds(distinct); !read.ok()) return read;
  return distinct;
}

absl::Status PasswdAccounts::AddSubordinateIds(std::vector<Account>& accounts) {
  absl::StatusOr<SubordinateIdFile> subuid = ReadSubordinateIds(subuid_path_);
  if (!subuid.ok()) return subuid.status();
  absl::StatusOr<SubordinateIdFile> subgid = ReadSubordinateIds(subgid_path_);
  if (!subgid.ok()) return subgid.status();
  for (Account& account : accounts) {
    account.subordinate_uids = subuid->RangesOf(account.name, account.uid);
    account.subordinate_gids = subgid->RangesOf(account.name, account.uid);
    account.subordinate_problems = subuid->ProblemsOf(account.name, account.uid);
    for (std::string& problem : subgid->ProblemsOf(account.name, account.uid)) {
      account.subordinate_problems.push_back(std::move(problem));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Account>> PasswdAccounts::AccountsWithUidIn(
    const std::vector<engine::UidRange>& uids) {
  absl::MutexLock lock(&mu_);
  std::vector<Account> found;
  if (uids.empty()) return found;
  engine::UidRangeIndex index;
  for (const engine::UidRange& range : engine::MergeUidRanges(uids)) index.Add(range, 0);
  index.Build();
  setpwent();
  int error = 0;
  while (true) {
    errno = 0;
    const passwd* entry = getpwent();
    if (entry == nullptr) {
      error = errno == ENOENT ? 0 : errno;
      break;
    }
    if (index.Find(entry->pw_uid).has_value()) {
      found.push_back(Account{AccountNameAsText(entry->pw_name), entry->pw_uid, entry->pw_gid});
    }
  }
  endpwent();
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat(
        "reading the account database (getpwent) failed: ", std::strerror(error)));
  }
  return found;
}

std::string AccountNameAsText(absl::string_view name) {
  if (engine::IsValidUtf8(name) && name.find('\\') == absl::string_view::npos) {
    return std::string(name);
  }
  return engine::EscapeInvalidUtf8(absl::StrReplaceAll(name, {{"\\", "\\x5c"}}));
}

std::vector<Account> DistinctAgentAccounts(std::vector<Account> listed,
                                           std::vector<std::string>& warnings) {
  std::sort(listed.begin(), listed.end(), [](const Account& a, const Account& b) {
    return std::tie(a.name, a.uid) < std::tie(b.name, b.uid);
  });
  std::set<std::string> taken;
  for (const Account& account : listed) taken.insert(account.name);
  std::vector<Account> accounts;
  // The first (lowest-UID) entry of the name being read, which keeps the name.
  std::string first_name;
  uint32_t first_uid = 0;
  uint32_t last_uid = 0;
  for (Account& account : listed) {
    if (!accounts.empty() && account.name == first_name) {
      if (account.uid == last_uid) continue;  // one account from two NSS sources
      last_uid = account.uid;
      std::string own = absl::StrCat(first_name, "~uid", account.uid);
      while (!taken.insert(own).second) own += "~";  // a real account may bear that name
      warnings.push_back(absl::StrCat(
          "the account database lists ", first_name, " under uid ", first_uid, " and uid ",
          account.uid, "; uid ", account.uid, " is confined as ", own,
          " (the floor only: no binding names it) until the duplicate is removed (`getent "
          "passwd ", first_uid, " ", account.uid, "` shows both)"));
      account.name = std::move(own);
      accounts.push_back(std::move(account));
      continue;
    }
    first_name = account.name;
    first_uid = last_uid = account.uid;
    accounts.push_back(std::move(account));
  }
  std::sort(accounts.begin(), accounts.end(),
            [](const Account& a, const Account& b) { return a.name < b.name; });
  // One UID under two names (useradd --non-unique, or NSS sources that disagree): the kernel
  // knows one process by its UID, so it is one subject. The first name keeps it.
  std::map<uint32_t, std::string> name_of_uid;
  std::vector<Account> distinct;
  for (Account& account : accounts) {
    auto [it, fresh] = name_of_uid.emplace(account.uid, account.name);
    if (!fresh) {
      warnings.push_back(absl::StrCat(
          "the account database names uid ", account.uid, " both ", it->second, " and ",
          account.name, "; it is one subject, enforced as ", it->second,
          " (the first by name) until one name is removed"));
      continue;
    }
    distinct.push_back(std::move(account));
  }
  return distinct;
}

absl::StatusOr<std::vector<Group>> PasswdAccounts::GroupsWithGidIn(
    const std::vector<engine::UidRange>& gids) {
  absl::MutexLock lock(&mu_);
  std::vector<Group> found;
  if (gids.empty()) return found;
  engine::UidRangeIndex index;
  for (const engine::UidRange& range : engine::MergeUidRanges(gids)) index.Add(range, 0);
  index.Build();
  setgrent();
  int error = 0;
  while (true) {
    errno = 0;
    const group* entry = getgrent();
    if (entry == nullptr) {
      error = errno == ENOENT ? 0 : errno;
      break;
    }
    if (index.Find(entry->gr_gid).has_value()) {
      found.push_back(Group{AccountNameAsText(entry->gr_name), entry->gr_gid});
    }
  }
  endgrent();
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat(
        "reading the group database (getgrent) failed: ", std::strerror(error)));
  }
  return found;
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
  std::vector<Account> found = {
      Account{AccountNameAsText(result->pw_name), result->pw_uid, result->pw_gid}};
  if (absl::Status read = AddSubordinateIds(found); !read.ok()) return read;
  return std::optional<Account>(std::move(found.front()));
}

}  // namespace leash::controlplane
