#include "fswatch/subid_hold.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/subordinate_ids.h"
#include "engine/uid_ranges.h"

namespace leash::fswatch {

std::optional<SubidFile> SubidFileAt(absl::string_view path) {
  if (path == engine::kSubuidPath) return SubidFile::kUids;
  if (path == engine::kSubgidPath) return SubidFile::kGids;
  return std::nullopt;
}

bool SubidRangesInForce(absl::string_view text, SubidFile file,
                        const policystream::SubjectEntry& entry, std::string& missing) {
  const engine::SubordinateIdFile parsed = engine::ParseSubordinateIds(
      text, file == SubidFile::kUids ? engine::kSubuidPath : engine::kSubgidPath);
  const std::string uid_text = absl::StrCat(entry.uid);
  auto owns = [&](absl::string_view owner) {
    if (entry.subid_owners.empty()) return owner == entry.account || owner == uid_text;
    return std::find(entry.subid_owners.begin(), entry.subid_owners.end(), owner) !=
           entry.subid_owners.end();
  };
  std::vector<engine::UidRange> in_force =
      file == SubidFile::kUids ? entry.subordinate_uids_in_chain : entry.subordinate_gids;
  if (file == SubidFile::kUids) in_force.push_back({entry.uid, entry.uid});
  in_force = engine::MergeUidRanges(std::move(in_force));
  for (const engine::UidRange& granted : parsed.RangesOf(owns)) {
    const std::vector<engine::UidRange> left = engine::SubtractUidRanges({granted}, in_force);
    if (left.empty()) continue;
    missing = engine::FormatUidRange(left.front());
    return false;
  }
  return true;
}

}  // namespace leash::fswatch
