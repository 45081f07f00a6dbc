// /var/lib/leash/ports.json: which proxy port belongs to which agent account, so the kernel's
// redirects and the proxy's listeners agree about it after a restart. A port is per account,
// for the account's life: ports come from 18000-18999, 18443 (the single-agent listener) is
// never handed out, an entry is never removed and a port never handed out twice — so
// re-planning an unchanged host moves no listener. The one move: an account whose port another
// process holds (bound while leashd was not running) gets a fresh port.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controlplane/account_source.h"

namespace leash::controlplane {

class PortMap {
 public:
  struct Assignment {
    std::string account;
    uint32_t uid = 0;
    uint16_t port = 0;
  };

  // Loads `path`. A missing file is an empty map. A file that does not parse, or holds a port
  // outside the range, 18443, a port twice, or an account name outside the agent namespace, is
  // FailedPrecondition naming the file and the problem: the reconcile then fails wholesale and
  // changes nothing. (The configured user is in the map too, so names are not only leash-*.)
  static absl::StatusOr<PortMap> Load(const std::string& path);
  // Parses the file's text (exposed for the fuzz target and tests).
  static absl::StatusOr<PortMap> Parse(absl::string_view json, const std::string& path);

  // The port of `account`, assigning the lowest port never handed out when it has none yet.
  // A UID change (the account was deleted and re-created) keeps the port and records the new
  // UID. ResourceExhausted when every port in the range has been handed out once. A port
  // `usable` rejects (one leashd could not hold) is passed over, and never handed out later;
  // an account whose own port it rejects is moved to a fresh port (or keeps it, when none is
  // left: its listener then fails and it is denied, never left without a port).
  absl::StatusOr<uint16_t> Assign(const Account& account,
                                  const std::function<bool(uint16_t)>& usable = nullptr);

  std::optional<uint16_t> PortOf(absl::string_view account) const;
  // Every assignment, sorted by account.
  std::vector<Assignment> All() const;
  // Whether Assign changed anything since Load.
  bool dirty() const { return dirty_; }

  std::string Serialize() const;
  // Writes atomically (temp + fsync + rename + fsync of the folder), mode 0644.
  absl::Status Save(const std::string& path);

 private:
  // The lowest port past every port ever handed out that `usable` accepts (and not 18443),
  // recorded as handed out.
  absl::StatusOr<uint16_t> NextPort(const std::string& account,
                                    const std::function<bool(uint16_t)>& usable);

  absl::flat_hash_map<std::string, Assignment> by_account_;
  // The highest port ever handed out (0: none): ports are never reused.
  uint16_t highest_port_ = 0;
  bool dirty_ = false;
};

}  // namespace leash::controlplane
