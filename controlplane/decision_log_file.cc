#include "controlplane/decision_log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

absl::StatusOr<int> OpenDecisionLog(const std::string& sink) {
  if (sink == "stdout") {
    const int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return absl::ErrnoToStatus(errno, "dup stdout for the decision log");
    return fd;
  }
  if (sink.empty() || sink[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "logging.decisions '", sink, "' must be an absolute file path or \"stdout\""));
  }
  const size_t slash = sink.rfind('/');
  if (slash > 0) {
    const std::string dir = sink.substr(0, slash);
    if (mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) {
      return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir, " for the decision log"));
    }
  }
  const int fd = open(sink.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open the decision log ", sink));
  return fd;
}

}  // namespace leash::controlplane
