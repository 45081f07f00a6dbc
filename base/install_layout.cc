#include "base/install_layout.h"

#include <limits.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leash::base {

std::string ExecutableDirectory() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  const std::string self(path);
  return self.substr(0, self.rfind('/'));
}

std::vector<std::string> LeashProgramCandidates(const std::string& self_dir,
                                                const std::string& name,
                                                const std::string& bazel_package,
                                                const std::string& own_package) {
  std::vector<std::string> candidates = {absl::StrCat(self_dir, "/", name)};
  // Only a program that runs from its own package's folder is in a Bazel build; an installed
  // one looks nowhere but beside itself and the install folder.
  const std::string own_suffix = absl::StrCat("/", own_package);
  if (absl::EndsWith(self_dir, own_suffix)) {
    const std::string root = self_dir.substr(0, self_dir.size() - own_suffix.size());
    candidates.push_back(absl::StrCat(root, "/", bazel_package, "/", name));
  }
  candidates.push_back(absl::StrCat(kInstalledProgramDir, "/", name));
  return candidates;
}

std::string FindLeashProgram(const std::string& name, const std::string& bazel_package,
                             const std::string& own_package) {
  for (const std::string& candidate :
       LeashProgramCandidates(ExecutableDirectory(), name, bazel_package, own_package)) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::StrCat(kInstalledProgramDir, "/", name);
}

}  // namespace leash::base
