#include "fswatch/subject_map.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "base/read_file.h"

namespace leash::fswatch {

absl::StatusOr<policystream::SubjectMapPtr> SubjectMapFromUpdate(
    const leash::v1::PolicyUpdate& update) {
  if (!update.full()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy update version ", update.version(),
        " is a delta (full: false); a starting map must be the whole map (full: true)"));
  }
  auto map = std::make_shared<policystream::SubjectMap>();
  for (const leash::v1::SubjectPolicy& wire : update.subjects()) {
    // The same conversion the PolicyStream subscriber makes.
    policystream::SubjectEntry entry = policystream::MakeSubjectEntry(wire);
    if (!map->emplace(entry.uid, std::move(entry)).second) {
      return absl::InvalidArgumentError(absl::StrCat("uid ", wire.uid(), " (", wire.account(),
                                                     ") is listed twice in the map"));
    }
  }
  return policystream::SubjectMapPtr(std::move(map));
}

absl::StatusOr<leash::v1::PolicyUpdate> ReadPolicyUpdateFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = base::ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  leash::v1::PolicyUpdate update;
  if (!update.ParseFromString(*bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a serialized leash.v1.PolicyUpdate (binary protobuf); write it with "
              "PolicyUpdate::SerializeToString"));
  }
  return update;
}

}  // namespace leash::fswatch
