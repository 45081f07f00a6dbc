// The subjects in force, as RPC handlers read them (Control.GetStatus/Check, Tools.CheckTool)
// while reconcile passes run on another thread. Updated after each pass; each subject's policy
// is compiled once per change and shared.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "controlplane/reconciler.h"
#include "engine/compiled_policy.h"
#include "engine/uid_ranges.h"

namespace leash::controlplane {

struct SubjectView {
  // The subject as in force; `state.published` is cleared (the policy lives once, in `policy`).
  SubjectState state;
  // Null when the subject has no policy. policy->config() is the resolved policy.
  std::shared_ptr<const engine::CompiledPolicy> policy;
  // With no policy: how its events are judged, by the floor's fail_mode as of the last pass
  // (what the sidecars were sent), so CheckTool follows a fail_mode change like they do.
  engine::FailMode no_policy_fail_mode = engine::FailMode::kClosed;
};

class SubjectDirectory {
 public:
  // Replaces the directory with `subjects`, recompiling only policies that changed.
  void Update(const std::map<uint32_t, SubjectState>& subjects);

  // The subject `uid` is: its own UID, or a subordinate UID of its (subordinate_plan.h).
  std::optional<SubjectView> ByUid(uint32_t uid) const;
  std::optional<SubjectView> ByAccount(absl::string_view account) const;
  // The configured user (the floor's `user`).
  std::optional<SubjectView> ConfiguredUser() const;
  std::map<uint32_t, SubjectView> All() const;

 private:
  mutable absl::Mutex mu_;
  std::map<uint32_t, SubjectView> by_uid_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint32_t> uid_by_account_ ABSL_GUARDED_BY(mu_);
  std::optional<uint32_t> configured_user_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, std::string> fingerprints_ ABSL_GUARDED_BY(mu_);
  engine::UidRangeIndex subordinate_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::controlplane
