// The shared parser: dashed names, both value forms, bools, defaults restored, and every bad
// flag an error returned (never an exit from inside absl).
#include "base/command_line.h"

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, test_count, 3, "a count");
ABSL_FLAG(std::string, test_path, "/run/x", "a path");
ABSL_FLAG(bool, test_switch, false, "a switch");
ABSL_FLAG(absl::Duration, test_timeout, absl::Seconds(1), "a timeout");

namespace leash::base {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseCommandLine, DashedNamesBothValueFormsAndPositionals) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(
      {"--test-count=7", "word", "--test-path", "/tmp/p", "--test-switch", "--", "--test-count=9"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_path), "/tmp/p");
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_THAT(parsed->positional, ElementsAre("word", "--test-count=9"));
  EXPECT_FALSE(parsed->help);
}

TEST(ParseCommandLine, AFlagNotGivenIsBackAtItsDefault) {
  ASSERT_TRUE(ParseCommandLine({"--test-count=7", "--test-switch"}).ok());
  ASSERT_TRUE(ParseCommandLine({"--notest-switch"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 3);
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
}

TEST(ParseCommandLine, HelpIsAskedForNotAnError) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine({"--help"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->help);
  EXPECT_TRUE(ParseCommandLine({"-h"})->help);
  const std::string help = FlagsHelp("usage: prog [flags]");
  EXPECT_THAT(help, HasSubstr("usage: prog [flags]\n"));
  EXPECT_THAT(help, HasSubstr("--test-timeout  a timeout (default: 1s)"));
  EXPECT_THAT(help, Not(HasSubstr("flagfile")));  // absl's own flags are not the program's
}

struct Bad {
  std::vector<std::string> args;
  const char* fragment;
};

TEST(ParseCommandLine, EveryBadFlagIsAnErrorNamingIt) {
  for (const Bad& bad : {Bad{{"--nope=1"}, "unknown flag '--nope=1'"},
                         Bad{{"--flagfile=/etc/shadow"}, "unknown flag"},
                         Bad{{"--test-count=x"}, "--test-count=x: "},
                         Bad{{"--test-timeout=soon"}, "--test-timeout=soon: "},
                         Bad{{"--test-switch=maybe"}, "--test-switch=maybe: "},
                         Bad{{"--notest-switch=1"}, "takes no value"},
                         Bad{{"--notest-path"}, "unknown flag"},
                         Bad{{"--test-path"}, "--test-path needs a value"}}) {
    absl::StatusOr<CommandLine> parsed = ParseCommandLine(bad.args);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad.args[0];
    EXPECT_THAT(parsed.status().message(), HasSubstr(bad.fragment)) << bad.args[0];
  }
}

}  // namespace
}  // namespace leash::base
