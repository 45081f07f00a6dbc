#include "base/install_layout.h"

#include <limits.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace leash::controlplane {

std::string ExecutableDirectory() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  const std::string self(path);
  return self.substr(0, self.rfind('/'));
}

std::string FindLeashProgram(const std::string& name, const std::string& bazel_package) {
  const std::string self = ExecutableDirectory();
  const std::string installed = absl::StrCat(kInstalledProgramDir, "/", name);
  for (const std::string& candidate : {absl::StrCat(self, "/", name),
                                       absl::StrCat(self, "/../", bazel_package, "/", name),
                                       installed}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return installed;
}

}  // namespace leash::controlplane
