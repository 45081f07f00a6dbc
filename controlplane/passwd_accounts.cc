#include "controlplane/passwd_accounts.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/atomic_file.h"
#include "base/read_file.h"
#include "engine/utf8.h"

namespace leash::controlplane {

namespace {

// Walks one database with its set/get/end calls, handing each entry to `visit`. End of the
// database leaves errno 0 (or ENOENT from some NSS modules); anything else means the walk
// stopped early, and "I could not look" must never read as "nobody": an error naming `what`.
template <typename Entry>
absl::Status Walk(void (*set)(), Entry* (*get)(), void (*end)(), const char* what,
                  absl::FunctionRef<void(const Entry&)> visit) {
  set();
  int error = 0;
  while (true) {
    errno = 0;
    const Entry* entry = get();
    if (entry == nullptr) {
      error = errno == ENOENT ? 0 : errno;
      break;
    }
    visit(*entry);
  }
  end();
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat("reading the ", what, " failed: ",
                                               std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status WalkPasswd(absl::FunctionRef<void(const passwd&)> visit) {
  return Walk<passwd>(setpwent, getpwent, endpwent, "account database (getpwent)", visit);
}

// An index answering whether an ID lies in any of `ranges`.
engine::UidRangeIndex AnyOf(const std::vector<engine::UidRange>& ranges) {
  engine::UidRangeIndex index;
  for (const engine::UidRange& range : engine::MergeUidRanges(ranges)) index.Add(range, 0);
  index.Build();
  return index;
}

}  // namespace

absl::StatusOr<std::vector<Account>> PasswdAccounts::ListAgentAccounts() {
  absl::MutexLock lock(&mu_);
  std::vector<Account> accounts;
  absl::Status walked = WalkPasswd([&](const passwd& entry) {
    if (absl::StartsWith(entry.pw_name, kAgentAccountPrefix)) {
      accounts.push_back(Account{AccountNameAsText(entry.pw_name), entry.pw_uid, entry.pw_gid});
    }
  });
  if (!walked.ok()) return walked;
  std::vector<std::string> warnings;
  std::vector<Account> distinct = DistinctAgentAccounts(std::move(accounts), warnings);
  for (const std::string& warning : warnings) {
    std::fprintf(stderr, "leashd: warning: %s\n", warning.c_str());
  }
  if (absl::Status read = AddSubordinateIds(distinct); !read.ok()) return read;
  return distinct;
}

namespace {

// getpwnam_r / getpwuid_r into a buffer that grows until the entry fits.
template <typename Lookup>
std::optional<passwd> PasswdEntry(std::vector<char>& buffer, Lookup lookup) {
  passwd entry;
  passwd* result = nullptr;
  int rc;
  while ((rc = lookup(&entry, buffer.data(), buffer.size(), &result)) == ERANGE) {
    buffer.resize(buffer.size() * 2);
  }
  if (rc != 0 || result == nullptr) return std::nullopt;
  return entry;
}

}  // namespace

absl::Status PasswdAccounts::AddSubordinateIds(std::vector<Account>& accounts) {
  absl::StatusOr<SubordinateIdFile> subuid = ReadSubordinateIds(subuid_path_);
  if (!subuid.ok()) return subuid.status();
  absl::StatusOr<SubordinateIdFile> subgid = ReadSubordinateIds(subgid_path_);
  if (!subgid.ok()) return subgid.status();
  // Ranges newuidmap takes from an NSS module (sssd, LDAP) are not in the two files.
  std::vector<std::string> nss_sources;
  if (absl::StatusOr<std::string> nsswitch = base::ReadFile(nsswitch_path_); nsswitch.ok()) {
    nss_sources = NonFileSubidSources(*nsswitch);
  } else if (!absl::IsNotFound(nsswitch.status())) {
    return nsswitch.status();
  }
  std::vector<char> buffer(16384);
  std::map<std::string, std::optional<uint32_t>, std::less<>> uid_of_name;
  auto lookup_name = [&](absl::string_view name) -> std::optional<uint32_t> {
    auto it = uid_of_name.find(name);
    if (it != uid_of_name.end()) return it->second;
    const std::string key(name);
    std::optional<passwd> entry = PasswdEntry(buffer, [&](passwd* e, char* b, size_t n, passwd** r) {
      return getpwnam_r(key.c_str(), e, b, n, r);
    });
    std::optional<uint32_t> uid;
    if (entry) uid = entry->pw_uid;
    uid_of_name.emplace(key, uid);
    return uid;
  };
  for (Account& account : accounts) {
    // newuidmap knows the account by the name getpwuid gives its UID (the raw bytes, which
    // the shown name may have escaped), by the UID as a number, and by any alias of the UID.
    std::optional<passwd> self = PasswdEntry(buffer, [&](passwd* e, char* b, size_t n, passwd** r) {
      return getpwuid_r(account.uid, e, b, n, r);
    });
    const std::string login = self ? std::string(self->pw_name) : account.name;
    auto owns = [&](absl::string_view owner) {
      return OwnerIsAccount(owner, login, account.uid, lookup_name);
    };
    account.subordinate_uids = subuid->RangesOf(owns);
    account.subordinate_gids = subgid->RangesOf(owns);
    std::set<std::string> owners = {login, absl::StrCat(account.uid)};
    for (const SubordinateIdFile* file : {&*subuid, &*subgid}) {
      for (const SubordinateIdFile::Entry& entry : file->entries) {
        if (owns(entry.owner)) owners.insert(entry.owner);
      }
    }
    account.subordinate_owners.assign(owners.begin(), owners.end());
    account.subordinate_notes = subuid->NotesOf(owns);
    for (std::string& note : subgid->NotesOf(owns)) {
      account.subordinate_notes.push_back(std::move(note));
    }
    account.subordinate_problems.clear();
    for (std::string& overlap : subuid->OverlapsWithOthers(owns, account.subordinate_uids)) {
      account.subordinate_problems.push_back(std::move(overlap));
    }
    for (std::string& overlap : subgid->OverlapsWithOthers(owns, account.subordinate_gids)) {
      account.subordinate_problems.push_back(std::move(overlap));
    }
    if (!nss_sources.empty()) {
      account.subordinate_problems.push_back(absl::StrCat(
          nsswitch_path_, " takes subordinate IDs from '", absl::StrJoin(nss_sources, " "),
          "', which leashd does not read, so which host IDs the account can run as is not "
          "known; serve them from /etc/subuid and /etc/subgid (subid: files)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Account>> PasswdAccounts::AccountsWithUidIn(
    const std::vector<engine::UidRange>& uids) {
  absl::MutexLock lock(&mu_);
  std::vector<Account> found;
  if (uids.empty()) return found;
  const engine::UidRangeIndex index = AnyOf(uids);
  absl::Status walked = WalkPasswd([&](const passwd& entry) {
    if (index.Find(entry.pw_uid).has_value()) {
      found.push_back(Account{AccountNameAsText(entry.pw_name), entry.pw_uid, entry.pw_gid});
    }
  });
  if (!walked.ok()) return walked;
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
  const engine::UidRangeIndex index = AnyOf(gids);
  absl::Status walked = Walk<group>(
      setgrent, getgrent, endgrent, "group database (getgrent)", [&](const group& entry) {
        if (index.Find(entry.gr_gid).has_value()) {
          found.push_back(Group{AccountNameAsText(entry.gr_name), entry.gr_gid});
        }
      });
  if (!walked.ok()) return walked;
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
