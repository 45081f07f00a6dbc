// A stateful AccountSource for unit tests of the logic above discovery.
#pragma once

#include <map>

#include "absl/strings/match.h"

#include "controlplane/account_source.h"

namespace leash::controlplane::testing {

class FakeAccounts : public AccountSource {
 public:
  void Add(const std::string& name, uint32_t uid) { accounts_[name] = Account{name, uid, uid}; }
  void Remove(const std::string& name) { accounts_.erase(name); }
  // Gives `name` (added before) these subordinate UID ranges.
  void SetSubordinateUids(const std::string& name, std::vector<engine::UidRange> ranges) {
    accounts_.at(name).subordinate_uids = std::move(ranges);
  }
  void SetSubordinateGids(const std::string& name, std::vector<engine::UidRange> ranges) {
    accounts_.at(name).subordinate_gids = std::move(ranges);
  }
  // A group of the group database (each account's own group is there too).
  void AddGroup(const std::string& name, uint32_t gid) { groups_[name] = gid; }
  void SetSubordinateProblem(const std::string& name, std::string problem) {
    accounts_.at(name).subordinate_problems = {std::move(problem)};
  }
  // Makes every call fail as an unreadable database would.
  void SetUnreadable(bool unreadable) { unreadable_ = unreadable; }
  // Makes only AccountsWithUidIn fail (the walk that checks whom subordinate ranges hold).
  void SetRangeWalkUnreadable(bool unreadable) { range_walk_unreadable_ = unreadable; }

  absl::StatusOr<std::vector<Account>> ListAgentAccounts() override {
    if (unreadable_) return absl::UnavailableError("reading the account database failed: EIO");
    std::vector<Account> out;
    for (const auto& [name, account] : accounts_) {
      if (absl::StartsWith(name, kAgentAccountPrefix)) out.push_back(account);
    }
    return out;
  }
  absl::StatusOr<std::optional<Account>> Lookup(absl::string_view name) override {
    if (unreadable_) return absl::UnavailableError("reading the account database failed: EIO");
    auto it = accounts_.find(std::string(name));
    if (it == accounts_.end()) return std::optional<Account>();
    return std::optional<Account>(it->second);
  }
  absl::StatusOr<std::vector<Group>> GroupsWithGidIn(
      const std::vector<engine::UidRange>& gids) override {
    if (unreadable_ || range_walk_unreadable_) {
      return absl::UnavailableError("reading the group database failed: EIO");
    }
    std::vector<Group> out;
    std::map<std::string, uint32_t> all = groups_;
    for (const auto& [name, account] : accounts_) all.emplace(name, account.gid);
    for (const auto& [name, gid] : all) {
      for (const engine::UidRange& range : gids) {
        if (range.Contains(gid)) {
          out.push_back(Group{name, gid});
          break;
        }
      }
    }
    return out;
  }
  absl::StatusOr<std::vector<Account>> AccountsWithUidIn(
      const std::vector<engine::UidRange>& uids) override {
    if (unreadable_ || range_walk_unreadable_) {
      return absl::UnavailableError("reading the account database failed: EIO");
    }
    std::vector<Account> out;
    for (const auto& [name, account] : accounts_) {
      for (const engine::UidRange& range : uids) {
        if (range.Contains(account.uid)) {
          out.push_back(account);
          break;
        }
      }
    }
    return out;
  }

 private:
  std::map<std::string, Account> accounts_;
  std::map<std::string, uint32_t> groups_;
  bool unreadable_ = false;
  bool range_walk_unreadable_ = false;
};

}  // namespace leash::controlplane::testing
