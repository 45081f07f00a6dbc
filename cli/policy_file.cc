#include "cli/policy_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "engine/config_yaml.h"

namespace leash::cli {

absl::StatusOr<std::string> ReadPolicyFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
  }
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (absl::Status size = engine::CheckPolicyYamlSize(static_cast<size_t>(st.st_size), path);
        !size.ok()) {
      return size;
    }
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    // Not a regular file (a pipe, /dev/stdin): the cap holds as it is read.
    if (absl::Status size = engine::CheckPolicyYamlSize(text.size(), path); !size.ok()) {
      return size;
    }
  }
  if (absl::Status valid = engine::CheckPolicyYamlText(text, path); !valid.ok()) return valid;
  return text;
}

}  // namespace leash::cli
