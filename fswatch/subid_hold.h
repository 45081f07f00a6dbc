// Whether an agent may open /etc/subuid or /etc/subgid now. newuidmap and newgidmap (setuid
// root, the agent's real UID kept) read them to decide which host IDs the agent may map into a
// user namespace it made. A range added to them (usermod --add-subuids) would be usable, and
// unconfined, from the moment it is written until leashd has put it in the subject's chain and
// in this watcher's map. So the watcher holds a subject's open of either file until every range
// the content grants the subject (as newuidmap reads it, engine/subordinate_ids.h) is in the map
// in force: in the subordinate UIDs leashd says its chain holds (SubjectEntry::
// subordinate_uids_in_chain, sent once the chain went in), or in its judged subordinate GIDs.
// Pure logic: the loop reads the content and keeps the holds.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/policystream/subject_map.h"

namespace leash::fswatch {

enum class SubidFile { kUids, kGids };

// Which of the two files `path` (as the kernel names the opened file) is; nullopt: neither.
std::optional<SubidFile> SubidFileAt(absl::string_view path);

// The most of either file the watcher reads to judge it; a longer file is not judged (denied).
inline constexpr size_t kSubidFileLimit = 4 << 20;

// Whether every range `text` grants `entry` (an owner field in entry.subid_owners, or its
// account name or UID in decimal when leashd sent none) is in entry's map ranges: its
// subordinate UIDs in its chain and its own UID for kUids, its subordinate GIDs for kGids. When not, sets
// `missing` to the first range that is not, for the record.
bool SubidRangesInForce(absl::string_view text, SubidFile file,
                        const policystream::SubjectEntry& entry, std::string& missing);

}  // namespace leash::fswatch
