// Putting lnft_probe where a test account can run it: the build tree lives under /root (0700),
// so the binary is copied onto a tmpfs the test mounts under /tmp (0755).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "test/fixtures/tmpfs.h"

namespace leash::testing {

// Copies the lnft_probe runfile into `mount` (mode 0755) and returns its path there.
absl::StatusOr<std::string> InstallProbe(const TmpfsMount& mount);

}  // namespace leash::testing
