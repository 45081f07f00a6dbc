#include "fswatch/marker.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace leash::fswatch {

Marker::Marker(FanotifySource& source, ReadMountInfo read_mountinfo, MarkOptions options)
    : source_(source), read_mountinfo_(std::move(read_mountinfo)), options_(std::move(options)) {}

absl::StatusOr<MarkReport> Marker::Reconcile(const policystream::SubjectMap& map) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<std::string> text = read_mountinfo_();
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<MountEntry>> mounts = ParseMountInfo(*text);
  if (!mounts.ok()) return mounts.status();
  const MarkPlan plan = PlanMarks(map, *mounts, options_);

  MarkReport report;
  report.every_filesystem = plan.every_filesystem;
  report.excluded = plan.excluded;
  std::set<std::string> present;
  for (const MountEntry& mount : *mounts) present.insert(mount.device);

  // Unmark what the plan no longer wants; forget filesystems that are gone (their marks went
  // with them).
  for (auto it = marked_.begin(); it != marked_.end();) {
    const auto& [device, path] = *it;
    if (plan.marks.count(device) && present.count(device)) {
      ++it;
      continue;
    }
    if (present.count(device)) {
      absl::Status removed = source_.UnmarkFilesystem(path);
      if (!removed.ok() && !absl::IsNotFound(removed)) {
        report.problems.push_back(absl::StrCat(path, " (", device, "): ", removed.message()));
        ++it;
        continue;
      }
    }
    report.removed.push_back(absl::StrCat(path, " (", device, ")"));
    it = marked_.erase(it);
  }
  for (const auto& [device, path] : plan.marks) {
    if (marked_.count(device)) continue;
    absl::Status added = source_.MarkFilesystem(path);
    if (!added.ok()) {
      report.problems.push_back(absl::StrCat(path, " (", device, "): could not be marked: ",
                                             added.message(), "; opens there are not judged"));
      continue;
    }
    marked_[device] = path;
    report.added.push_back(absl::StrCat(path, " (", device, ")"));
  }
  for (const std::string& problem : report.problems) {
    if (reported_.insert(problem).second) report.new_problems.push_back(problem);
  }
  return report;
}

std::map<std::string, std::string> Marker::marked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return marked_;
}

}  // namespace leash::fswatch
