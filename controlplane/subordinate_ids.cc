#include "controlplane/subordinate_ids.h"

#include "base/read_file.h"

namespace leash::controlplane {

absl::StatusOr<SubordinateIdFile> ReadSubordinateIds(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (absl::IsNotFound(text.status())) return ParseSubordinateIds("", path);
  if (!text.ok()) return text.status();
  return ParseSubordinateIds(*text, path);
}

}  // namespace leash::controlplane
