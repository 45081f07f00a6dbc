#include "controlplane/leftover_sidecars.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using namespace std::string_literals;

const std::vector<std::string> kBinaries = {"/usr/lib/leash/leash-fswatch",
                                            "/usr/lib/leash/leash-proxy"};
const std::string kSocket = "/run/leash/leash.sock";

TEST(IsSidecarOfTest, EachSidecarAsLeashdStartsIt) {
  EXPECT_TRUE(IsSidecarOf("/usr/lib/leash/leash-fswatch\0--socket=/run/leash/leash.sock\0"
                          "--decision-log-fd=3\0"s,
                          kBinaries, kSocket));
  EXPECT_TRUE(IsSidecarOf("/usr/lib/leash/leash-proxy\0--admin-socket=/run/leash/leash.sock\0"
                          "--decision-log-fd=3\0"s,
                          kBinaries, kSocket));
  // Without the trailing NUL too.
  EXPECT_TRUE(IsSidecarOf("/usr/lib/leash/leash-proxy\0--admin-socket=/run/leash/leash.sock"s,
                          kBinaries, kSocket));
}

TEST(IsSidecarOfTest, AnotherLeashdsSidecarIsNotOurs) {
  // The same binary against another admin socket belongs to a leashd on other folders.
  EXPECT_FALSE(IsSidecarOf("/usr/lib/leash/leash-fswatch\0--socket=/tmp/other/leash.sock\0"s,
                           kBinaries, kSocket));
  // A socket path that only starts like ours.
  EXPECT_FALSE(IsSidecarOf("/usr/lib/leash/leash-fswatch\0--socket=/run/leash/leash.sock2\0"s,
                           kBinaries, kSocket));
}

TEST(IsSidecarOfTest, OtherProgramsNamingTheSocketAreLeftAlone) {
  // The CLI, or anything else that names the socket, is not a sidecar.
  EXPECT_FALSE(IsSidecarOf("/usr/bin/leash\0--socket=/run/leash/leash.sock\0status\0"s,
                           kBinaries, kSocket));
  EXPECT_FALSE(IsSidecarOf("/bin/sh\0-c\0/usr/lib/leash/leash-proxy "
                           "--admin-socket=/run/leash/leash.sock\0"s,
                           kBinaries, kSocket));
  // The binary alone, with no socket, is not one of leashd's.
  EXPECT_FALSE(IsSidecarOf("/usr/lib/leash/leash-proxy\0"s, kBinaries, kSocket));
  // A kernel thread or a zombie has an empty command line.
  EXPECT_FALSE(IsSidecarOf("", kBinaries, kSocket));
}

// `leash teardown` names the sidecars by program name: the leashd that left them may have found
// them anywhere. A name without a folder matches the program's last path part, and only that.
TEST(IsSidecarOfTest, AProgramNameMatchesThatProgramFromAnyFolder) {
  const std::vector<std::string> names = {"leash-fswatch", "leash-proxy"};
  EXPECT_TRUE(IsSidecarOf("/opt/build/bin/leash-proxy\0--socket=/run/leash/leash.sock\0"s, names,
                          kSocket));
  EXPECT_TRUE(IsSidecarOf("leash-fswatch\0--socket=/run/leash/leash.sock\0"s, names, kSocket));
  EXPECT_FALSE(IsSidecarOf("/opt/bin/not-leash-proxy\0--socket=/run/leash/leash.sock\0"s, names,
                           kSocket));
  EXPECT_FALSE(IsSidecarOf("/opt/bin/leash-proxy\0--socket=/tmp/other/leash.sock\0"s, names,
                           kSocket));
  // A full path still matches only that path.
  EXPECT_FALSE(IsSidecarOf("/opt/bin/leash-proxy\0--socket=/run/leash/leash.sock\0"s, kBinaries,
                           kSocket));
}

// The numbers the next leashd takes a leftover watcher's group and table under.
TEST(WatcherGroupNumbersTest, ALeftoverWatchersGroupIsFoundUnderTheNumbersItWasGiven) {
  const auto numbers = WatcherGroupNumbers(
      "/usr/lib/leash/leash-fswatch\0--socket=/run/leash/leash.sock\0--decision-log-fd=3\0"
      "--fanotify-fd=4\0--pending-table-fd=5\0--standby\0"s);
  ASSERT_TRUE(numbers.has_value());
  EXPECT_EQ(numbers->first, 4);
  EXPECT_EQ(numbers->second, 5);
  // Either missing or not a number: nothing to take (a new group is made).
  EXPECT_FALSE(WatcherGroupNumbers("/usr/lib/leash/leash-fswatch\0--fanotify-fd=4\0"s));
  EXPECT_FALSE(WatcherGroupNumbers(
      "/usr/lib/leash/leash-fswatch\0--fanotify-fd=x\0--pending-table-fd=5\0"s));
  EXPECT_FALSE(WatcherGroupNumbers(""));
}

}  // namespace
}  // namespace leash::controlplane
