// Who the subjects are: the system account database, as the kernel resolves UIDs through it.
// Discovery enumerates it for the agent namespace (accounts named leash-*); group membership
// is never read. The real source walks getpwent (so NSS sources count); tests use a fake.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

// The prefix Sentinel mints an agent's Linux account with.
inline constexpr absl::string_view kAgentAccountPrefix = "leash-";

struct Account {
  Account() = default;
  Account(std::string name, uint32_t uid, uint32_t gid)
      : name(std::move(name)), uid(uid), gid(gid) {}

  std::string name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  // The subordinate UID and GID ranges the account holds (/etc/subuid, /etc/subgid; merged):
  // host IDs its processes can run under inside a user namespace (engine/uid_ranges.h).
  std::vector<engine::UidRange> subordinate_uids;
  std::vector<engine::UidRange> subordinate_gids;
  // Why its subordinate ranges are not known for certain (an NSS source leashd cannot read):
  // leashd denies such a subject rather than guess.
  std::vector<std::string> subordinate_problems;
  // Lines of those files naming it that are written in another form than useradd's (read as
  // newuidmap reads them) or that newuidmap ignores: said by `leash validate`, never a denial.
  std::vector<std::string> subordinate_notes;
  // The owner fields newuidmap takes as this account's: its login name, its UID in decimal, and
  // every owner in the two files that names it (an alias of its UID). Sorted.
  std::vector<std::string> subordinate_owners;
  bool operator==(const Account& other) const {
    return name == other.name && uid == other.uid && gid == other.gid &&
           subordinate_uids == other.subordinate_uids &&
           subordinate_gids == other.subordinate_gids &&
           subordinate_problems == other.subordinate_problems &&
           subordinate_notes == other.subordinate_notes &&
           subordinate_owners == other.subordinate_owners;
  }
};

// A group of the system's group database.
struct Group {
  std::string name;
  uint32_t gid = 0;
};

class AccountSource {
 public:
  virtual ~AccountSource() = default;
  // Every account whose name starts with kAgentAccountPrefix, sorted by name, each name once.
  // An error means the database could not be read ("I could not look" — never "nobody is
  // there"), or that it lists one name under two UIDs. A name that is not UTF-8 (useradd
  // --badname allows one) comes with its stray bytes, and any backslash, written as \xNN
  // (AccountNameAsText in passwd_accounts.h): names travel in protobuf strings (PolicyStream,
  // ports.json, Status), which must be UTF-8, and such an account must still be a subject,
  // enforced by its UID.
  virtual absl::StatusOr<std::vector<Account>> ListAgentAccounts() = 0;
  // One account by name; nullopt when it does not exist.
  virtual absl::StatusOr<std::optional<Account>> Lookup(absl::string_view name) = 0;
  // Every account (any name) whose UID is inside `uids`: whom a subject's subordinate ranges
  // would let it act as. An error means the database could not be read.
  virtual absl::StatusOr<std::vector<Account>> AccountsWithUidIn(
      const std::vector<engine::UidRange>& uids) = 0;
  // Every group whose GID is inside `gids`: whose files a subject's subordinate GID ranges
  // would let it reach (a `docker` or `shadow` group). An error: the database could not be read.
  virtual absl::StatusOr<std::vector<Group>> GroupsWithGidIn(
      const std::vector<engine::UidRange>& gids) = 0;
};

}  // namespace leash::controlplane
