#include "controlplane/subject_directory.h"

#include "engine/config_defaults.h"

namespace leash::controlplane {

void SubjectDirectory::Update(const std::map<uint32_t, SubjectState>& subjects) {
  std::map<uint32_t, SubjectView> next;
  std::map<uint32_t, std::string> prints;
  absl::flat_hash_map<std::string, uint32_t> by_account;
  std::optional<uint32_t> configured;
  engine::UidRangeIndex subordinate;
  absl::MutexLock lock(&mu_);
  for (const auto& [uid, state] : subjects) {
    SubjectView view;
    // Everything but the published policy, which lives once, compiled, in view.policy.
    view.state.account = state.account;
    view.state.configured_user = state.configured_user;
    view.state.port = state.port;
    view.state.in_discovery = state.in_discovery;
    view.state.fingerprint = state.fingerprint;
    view.state.chain = state.chain;
    view.state.sources = state.sources;
    view.state.problem = state.problem;
    view.state.subordinate_uids = state.subordinate_uids;
    view.state.subordinate_gids = state.subordinate_gids;
    for (const engine::UidRange& range : state.subordinate_uids) subordinate.Add(range, uid);
    if (state.published.has_no_policy()) {
      // The floor's fail_mode as of the pass that published it, as the sidecars judge by.
      leash::v1::Config fail;
      fail.set_fail_mode(state.published.no_policy().fail_mode());
      view.no_policy_fail_mode = engine::EffectiveFailMode(fail);
    }
    const std::string& print = state.fingerprint;
    auto old = by_uid_.find(uid);
    if (old != by_uid_.end() && fingerprints_[uid] == print) {
      view.policy = old->second.policy;
    } else if (state.published.has_policy()) {
      std::vector<engine::CommandLink> links;
      for (const leash::v1::CommandLink& link : state.published.command_links()) {
        links.push_back({link.name(), link.target()});
      }
      view.policy = std::make_shared<const engine::CompiledPolicy>(
          engine::CompiledPolicy::Compile(
              state.published.policy(), links,
              state.published.has_audit_above() ? &state.published.audit_above() : nullptr));
    }
    by_account[state.account.name] = uid;
    if (state.configured_user) configured = uid;
    next[uid] = std::move(view);
    prints[uid] = print;
  }
  by_uid_.swap(next);
  fingerprints_.swap(prints);
  uid_by_account_.swap(by_account);
  configured_user_ = configured;
  // The reconcile made the ranges disjoint (a shared UID would go to the range starting first).
  subordinate.Build();
  subordinate_ = std::move(subordinate);
}

std::optional<SubjectView> SubjectDirectory::ByUid(uint32_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) {
    const std::optional<uint32_t> owner = subordinate_.Find(uid);
    if (!owner) return std::nullopt;
    it = by_uid_.find(*owner);
    if (it == by_uid_.end()) return std::nullopt;
  }
  return it->second;
}

std::optional<SubjectView> SubjectDirectory::ByAccount(absl::string_view account) const {
  absl::MutexLock lock(&mu_);
  auto it = uid_by_account_.find(account);
  if (it == uid_by_account_.end()) return std::nullopt;
  return by_uid_.at(it->second);
}

std::optional<SubjectView> SubjectDirectory::ConfiguredUser() const {
  absl::MutexLock lock(&mu_);
  if (!configured_user_) return std::nullopt;
  return by_uid_.at(*configured_user_);
}

std::map<uint32_t, SubjectView> SubjectDirectory::All() const {
  absl::MutexLock lock(&mu_);
  return by_uid_;
}

}  // namespace leash::controlplane
