#include "controlplane/subject_directory.h"

namespace leash::controlplane {

void SubjectDirectory::Update(const std::map<uint32_t, SubjectState>& subjects) {
  std::map<uint32_t, SubjectView> next;
  std::map<uint32_t, std::string> prints;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [uid, state] : subjects) {
      SubjectView view;
      view.state = state;
      std::string print = Fingerprint(state.published);
      auto old = by_uid_.find(uid);
      if (old != by_uid_.end() && fingerprints_[uid] == print) {
        view.policy = old->second.policy;
      } else if (state.published.has_policy()) {
        view.policy = std::make_shared<const engine::CompiledPolicy>(
            engine::CompiledPolicy::Compile(state.published.policy()));
      }
      next[uid] = std::move(view);
      prints[uid] = std::move(print);
    }
    by_uid_.swap(next);
    fingerprints_.swap(prints);
  }
}

std::optional<SubjectView> SubjectDirectory::ByUid(uint32_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return std::nullopt;
  return it->second;
}

std::optional<SubjectView> SubjectDirectory::ByAccount(absl::string_view account) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [uid, view] : by_uid_) {
    if (view.state.account.name == account) return view;
  }
  return std::nullopt;
}

std::map<uint32_t, SubjectView> SubjectDirectory::All() const {
  absl::MutexLock lock(&mu_);
  return by_uid_;
}

}  // namespace leash::controlplane
