// /proc/self/mountinfo, parsed: which mounts the watcher's mount namespace has, which filesystem
// (device) each belongs to and where it is mounted. The marker plans its filesystem marks from
// it. Mount points are chosen by whoever mounted them, so the parser treats the text as
// untrusted (it has a fuzz target).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::fswatch {

struct MountEntry {
  int id = 0;
  int parent_id = 0;
  // "major:minor" of the filesystem; every mount of one filesystem shares it.
  std::string device;
  // The path inside the filesystem that is mounted here ("/" for a whole filesystem).
  std::string root;
  // Where it is mounted, unescaped (\040 -> ' ' and so on).
  std::string mount_point;
  std::string fstype;
  std::string source;
};

// Parses the whole text. A malformed line is InvalidArgument naming its line number; the
// marker then keeps the marks it has rather than planning from half a table.
absl::StatusOr<std::vector<MountEntry>> ParseMountInfo(absl::string_view text);

// Undoes the kernel's octal escaping of ' ', '\t', '\n' and '\\' in mountinfo paths.
std::string UnescapeMountPath(absl::string_view escaped);

}  // namespace leash::fswatch
