#include "test/network/probe.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace leash::testing {

absl::StatusOr<std::string> InstallProbe(const TmpfsMount& mount) {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  if (runfiles == nullptr) return absl::FailedPreconditionError("TEST_SRCDIR is not set");
  const std::string source = absl::StrCat(runfiles, "/leash/test/network/lnft_probe");
  const std::string target = absl::StrCat(mount.path(), "/lnft_probe");
  std::ifstream in(source, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", source));
  std::ofstream out(target, std::ios::binary);
  out << in.rdbuf();
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", target));
  if (chmod(target.c_str(), 0755) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chmod ", target));
  }
  return target;
}

}  // namespace leash::testing
