// Which filesystems the watcher marks, decided from the subject map and the mount table.
//
// Why filesystems (FAN_MARK_FILESYSTEM) and not mounts: a mount mark covers one mount of one
// mount namespace. A leashed account can `unshare -rm` (where unprivileged user namespaces are
// on), and every mount of its new namespace is a copy the mount mark does not cover: its
// opens reach the file with no event at all. A filesystem mark covers every
// mount of the filesystem in every namespace, bind mounts and overlayfs layers included.
//
// Which filesystems a subject needs:
// - whitelist (default-deny) on filesystem or commands: every filesystem. A path that is not
//   listed is denied wherever it lives, and a filesystem left unmarked is one where every
//   open and exec is silently allowed, so a whitelist is only honest over all of them.
// - no policy (denied everything): every filesystem, for the same reason.
// - blacklist on filesystem: the filesystem holding each deny entry (for a glob, its literal
//   directory part), and every filesystem mounted below it.
// - blacklist on commands: a deny entry by name (ssh) matches a binary anywhere, so every
//   filesystem; by absolute path, the filesystem holding it.
// - enforcers.filesystem: false: none (that surface is unenforced for the subject).
// - any subject at all: the filesystem holding /etc/subuid and /etc/subgid, whose opens by an
//   agent are held until the ranges they give are in force (subid_hold.h).
// The union over all subjects is marked. Never marked: procfs (the event loop reads
// /proc/<pid>/status and /proc/self/fd; an open it made on a marked filesystem would have
// nobody to answer it) and autofs (a trigger; what it mounts is marked when it appears).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/policystream/subject_map.h"
#include "fswatch/mountinfo.h"

namespace leash::fswatch {

struct MarkOptions {
  // When set, only filesystems all of whose mounts lie at or below this directory are marked,
  // and never the one holding "/". Tests and benchmarks set it to the tmpfs they mounted; the
  // binary refuses a test-only start without it.
  std::string only_under;
};

struct MarkPlan {
  // Filesystem ("major:minor") -> the mount point used to mark it.
  std::map<std::string, std::string> marks;
  // Filesystems the map needs but that are left unmarked by design, each with why
  // ("/proc (proc, 0:20): procfs is never marked ..."): procfs, autofs, and under only_under
  // everything outside it.
  std::vector<std::string> excluded;
  // Whether some subject needs every filesystem.
  bool every_filesystem = false;
};

MarkPlan PlanMarks(const policystream::SubjectMap& map, const std::vector<MountEntry>& mounts,
                   const MarkOptions& options);

// Whether `path` is `dir` or lies below it, on component boundaries. Both normalized.
bool PathIsAtOrUnder(const std::string& path, const std::string& dir);

}  // namespace leash::fswatch
