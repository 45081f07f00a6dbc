#include "engine/uid_ranges.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace leash::engine {

std::string FormatUidRange(const UidRange& range) {
  if (range.first == range.last) return absl::StrCat(range.first);
  return absl::StrCat(range.first, "-", range.last);
}

std::string FormatUidRanges(const std::vector<UidRange>& ranges) {
  return absl::StrJoin(ranges, ", ", [](std::string* out, const UidRange& range) {
    out->append(FormatUidRange(range));
  });
}

std::vector<UidRange> MergeUidRanges(std::vector<UidRange> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<UidRange> merged;
  for (const UidRange& range : ranges) {
    // Adjacent counts as joined: last + 1 == first (computed in 64 bits: last may be the top).
    if (!merged.empty() &&
        static_cast<uint64_t>(merged.back().last) + 1 >= static_cast<uint64_t>(range.first)) {
      merged.back().last = std::max(merged.back().last, range.last);
      continue;
    }
    merged.push_back(range);
  }
  return merged;
}

std::vector<UidRange> SubtractUidRanges(const std::vector<UidRange>& ranges,
                                        const std::vector<UidRange>& removed) {
  const std::vector<UidRange> holes = MergeUidRanges(removed);
  std::vector<UidRange> out;
  for (const UidRange& range : MergeUidRanges(ranges)) {
    uint64_t next = range.first;  // the first ID of `range` not yet placed or removed
    for (const UidRange& hole : holes) {
      if (hole.last < next || hole.first > range.last) continue;
      if (hole.first > next) out.push_back({static_cast<uint32_t>(next), hole.first - 1});
      next = static_cast<uint64_t>(hole.last) + 1;
    }
    if (next <= range.last) out.push_back({static_cast<uint32_t>(next), range.last});
  }
  return out;
}

void UidRangeIndex::Add(const UidRange& range, uint32_t owner) {
  entries_.push_back({range, owner});
}

bool UidRangeIndex::Build() {
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.range < b.range; });
  bool disjoint = true;
  std::vector<Entry> kept;
  for (const Entry& entry : entries_) {
    Entry cut = entry;
    if (!kept.empty() && kept.back().range.last >= cut.range.first) {
      disjoint = false;
      if (kept.back().range.last >= cut.range.last) continue;  // wholly inside the one before
      cut.range.first = kept.back().range.last + 1;
    }
    kept.push_back(cut);
  }
  entries_ = std::move(kept);
  return disjoint;
}

std::optional<uint32_t> UidRangeIndex::Find(uint32_t id) const {
  // The last range whose first ID is at or below `id`.
  auto it = std::upper_bound(entries_.begin(), entries_.end(), id,
                             [](uint32_t value, const Entry& e) { return value < e.range.first; });
  if (it == entries_.begin()) return std::nullopt;
  --it;
  if (!it->range.Contains(id)) return std::nullopt;
  return it->owner;
}

}  // namespace leash::engine
