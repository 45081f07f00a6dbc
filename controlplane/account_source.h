// Who the subjects are: the system account database, as the kernel resolves UIDs through it.
// Discovery enumerates it for the agent namespace (accounts named leash-*); group membership
// is never read. The real source walks getpwent (so NSS sources count); tests use a fake.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::controlplane {

// The prefix Sentinel mints an agent's Linux account with.
inline constexpr absl::string_view kAgentAccountPrefix = "leash-";

struct Account {
  std::string name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool operator==(const Account& other) const {
    return name == other.name && uid == other.uid && gid == other.gid;
  }
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
};

}  // namespace leash::controlplane
