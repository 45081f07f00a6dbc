#include "base/install_layout.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::base {
namespace {

using ::testing::ElementsAre;

TEST(LeashProgramCandidatesTest, InABazelBuildTheProgramIsLookedForInItsOwnPackage) {
  // leashd in bazel-bin/controlplane/main finds the proxy in bazel-bin/proxy.
  EXPECT_THAT(LeashProgramCandidates("/o/bazel-bin/controlplane/main", "leash-proxy", "proxy",
                                     "controlplane/main"),
              ElementsAre("/o/bazel-bin/controlplane/main/leash-proxy",
                          "/o/bazel-bin/proxy/leash-proxy", "/usr/lib/leash/leash-proxy"));
  // leash in bazel-bin/cli finds leashd in bazel-bin/controlplane/main.
  EXPECT_THAT(LeashProgramCandidates("/o/bazel-bin/cli", "leashd", "controlplane/main", "cli"),
              ElementsAre("/o/bazel-bin/cli/leashd", "/o/bazel-bin/controlplane/main/leashd",
                          "/usr/lib/leash/leashd"));
}

TEST(LeashProgramCandidatesTest, AnInstalledProgramLooksBesideItselfAndInTheInstallFolder) {
  EXPECT_THAT(LeashProgramCandidates("/usr/lib/leash", "leash-proxy", "proxy",
                                     "controlplane/main"),
              ElementsAre("/usr/lib/leash/leash-proxy", "/usr/lib/leash/leash-proxy"));
  EXPECT_THAT(LeashProgramCandidates("/usr/bin", "leashd", "controlplane/main", "cli"),
              ElementsAre("/usr/bin/leashd", "/usr/lib/leash/leashd"));
}

}  // namespace
}  // namespace leash::base
