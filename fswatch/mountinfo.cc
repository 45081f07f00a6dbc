#include "fswatch/mountinfo.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace leash::fswatch {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

}  // namespace

std::string UnescapeMountPath(absl::string_view escaped) {
  std::string out;
  out.reserve(escaped.size());
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '\\' && i + 3 < escaped.size() && IsOctal(escaped[i + 1]) && IsOctal(escaped[i + 2]) &&
        IsOctal(escaped[i + 3])) {
      const int value =
          (escaped[i + 1] - '0') * 64 + (escaped[i + 2] - '0') * 8 + (escaped[i + 3] - '0');
      if (value < 256) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(escaped[i]);
  }
  return out;
}

absl::StatusOr<std::vector<MountEntry>> ParseMountInfo(absl::string_view text) {
  std::vector<MountEntry> mounts;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    size_t separator = 0;
    for (size_t i = 6; i < fields.size(); ++i) {
      if (fields[i] == "-") {
        separator = i;
        break;
      }
    }
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("/proc/self/mountinfo line ", line_number, ": ", why));
    };
    if (separator == 0 || separator + 2 >= fields.size()) {
      return bad("no ' - fstype source' part");
    }
    MountEntry entry;
    if (!absl::SimpleAtoi(fields[0], &entry.id) || !absl::SimpleAtoi(fields[1], &entry.parent_id)) {
      return bad("mount id or parent id is not a number");
    }
    std::vector<absl::string_view> device = absl::StrSplit(fields[2], ':');
    int major = 0, minor = 0;
    if (device.size() != 2 || !absl::SimpleAtoi(device[0], &major) ||
        !absl::SimpleAtoi(device[1], &minor)) {
      return bad("device is not major:minor");
    }
    entry.device = std::string(fields[2]);
    entry.root = UnescapeMountPath(fields[3]);
    entry.mount_point = UnescapeMountPath(fields[4]);
    if (entry.mount_point.empty() || entry.mount_point.front() != '/') {
      return bad("mount point is not an absolute path");
    }
    entry.fstype = std::string(fields[separator + 1]);
    entry.source = UnescapeMountPath(fields[separator + 2]);
    mounts.push_back(std::move(entry));
  }
  return mounts;
}

}  // namespace leash::fswatch
