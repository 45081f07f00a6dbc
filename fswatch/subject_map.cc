#include "fswatch/subject_map.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"

namespace leash::fswatch {

absl::StatusOr<sidecar::SubjectMapPtr> SubjectMapFromUpdate(
    const leash::v1::PolicyUpdate& update) {
  if (!update.full()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy update version ", update.version(),
        " is a delta (full: false); a starting map must be the whole map (full: true)"));
  }
  auto map = std::make_shared<sidecar::SubjectMap>();
  for (const leash::v1::SubjectPolicy& wire : update.subjects()) {
    // The same conversion the PolicyStream subscriber makes.
    sidecar::SubjectEntry entry = sidecar::MakeSubjectEntry(wire);
    if (!map->emplace(entry.uid, std::move(entry)).second) {
      return absl::InvalidArgumentError(absl::StrCat("uid ", wire.uid(), " (", wire.account(),
                                                     ") is listed twice in the map"));
    }
  }
  return sidecar::SubjectMapPtr(std::move(map));
}

absl::StatusOr<leash::v1::PolicyUpdate> ReadPolicyUpdateFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string bytes;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return absl::ErrnoToStatus(error, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  leash::v1::PolicyUpdate update;
  if (!update.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a serialized leash.v1.PolicyUpdate (binary protobuf); write it with "
              "PolicyUpdate::SerializeToString"));
  }
  return update;
}

}  // namespace leash::fswatch
