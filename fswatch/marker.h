// Keeps the group's filesystem marks equal to the plan (mark_plan.h) for the map in force:
// called when a map is published (before it is acked) and every 5 seconds, so a filesystem
// mounted since is picked up. Never called by the event loop; path lookups made here may wait
// on a filesystem without stalling any answer.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "proto/policystream/subject_map.h"
#include "fswatch/fanotify_source.h"
#include "fswatch/mark_plan.h"

namespace leash::fswatch {

struct MarkReport {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  // Left unmarked by design (mark_plan.h).
  std::vector<std::string> excluded;
  // Filesystems that should be marked and could not be ("<mount> (<dev>): <why>"), every one
  // of them, and the subset not reported by an earlier call.
  std::vector<std::string> problems;
  std::vector<std::string> new_problems;
  bool every_filesystem = false;
};

class Marker {
 public:
  using ReadMountInfo = std::function<absl::StatusOr<std::string>()>;

  Marker(FanotifySource& source, ReadMountInfo read_mountinfo, MarkOptions options);

  // Plans from `map` and the mount table as it is now, and applies the difference. When the
  // mount table cannot be read or parsed nothing changes ("I could not look" must never
  // become "nothing to watch") and the error is returned. Thread-safe.
  absl::StatusOr<MarkReport> Reconcile(const policystream::SubjectMap& map);

  // Device -> mount point, as marked now.
  std::map<std::string, std::string> marked() const;

 private:
  FanotifySource& source_;
  ReadMountInfo read_mountinfo_;
  const MarkOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> marked_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> reported_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::fswatch
