// A subject's UIDs: its account's own UID and the subordinate ranges the account holds
// (/etc/subuid). A process the agent runs inside a user namespace it made with newuidmap runs
// under a host UID from those ranges, and is still the agent: nftables dispatch, the proxy and
// the watcher all treat the whole set as that one subject. Pure: the ranges are read by leashd
// (controlplane/subordinate_ids.h) and travel to the sidecars in SubjectPolicy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace leash::engine {

// The UIDs first..last, both included.
struct UidRange {
  uint32_t first = 0;
  uint32_t last = 0;

  uint64_t size() const { return static_cast<uint64_t>(last) - first + 1; }
  bool Contains(uint32_t id) const { return id >= first && id <= last; }
  bool Overlaps(const UidRange& other) const {
    return first <= other.last && other.first <= last;
  }
  bool operator==(const UidRange& other) const {
    return first == other.first && last == other.last;
  }
  bool operator!=(const UidRange& other) const { return !(*this == other); }
  bool operator<(const UidRange& other) const {
    return first != other.first ? first < other.first : last < other.last;
  }
};

// "100000-165535", or "1001" for a range of one.
std::string FormatUidRange(const UidRange& range);
// "1001, 100000-165535" (sorted as given).
std::string FormatUidRanges(const std::vector<UidRange>& ranges);

// Sorted, with overlapping and adjacent ranges joined: the fewest ranges covering the same IDs.
std::vector<UidRange> MergeUidRanges(std::vector<UidRange> ranges);

// `ranges` without the IDs in `removed` (both any order); the result is merged.
std::vector<UidRange> SubtractUidRanges(const std::vector<UidRange>& ranges,
                                        const std::vector<UidRange>& removed);

// A lookup from an ID to the subject whose ranges hold it, by binary search over disjoint
// ranges: the cost of a miss (the host's every other UID) grows with log(ranges), not with
// the number of subjects.
class UidRangeIndex {
 public:
  // Adds `range` as `owner`'s. Ranges should not overlap one another; Build() checks.
  void Add(const UidRange& range, uint32_t owner);
  // Sorts the ranges. False if two of them overlapped: leashd makes them disjoint, so that is a
  // map caught between two passes. Every ID still has one owner then (the range that starts
  // first keeps what it shares), never none: an ID nobody owns is judged as nobody's, allowed.
  bool Build();
  // The owner of the range holding `id`, if any.
  std::optional<uint32_t> Find(uint32_t id) const;
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    UidRange range;
    uint32_t owner;
  };
  std::vector<Entry> entries_;
};

}  // namespace leash::engine
