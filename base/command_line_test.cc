// The shared parser: dashed names, both value forms, bools, defaults restored, and every bad
// flag an error returned (never an exit from inside absl); and what a program may add through
// CommandLineRules: one-letter names, a repeated flag, the flags given, an environment default,
// a check of every value, and an unknown flag pointing at the program's --help.
#include "base/command_line.h"

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, test_count, 3, "a count");
ABSL_FLAG(std::string, test_path, "/run/x", "a path");
ABSL_FLAG(bool, test_switch, false, "a switch");
ABSL_FLAG(absl::Duration, test_timeout, absl::Seconds(1), "a timeout");
ABSL_FLAG(leash::RepeatedFlag, test_list, {}, "a list");

namespace leash {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

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

TEST(ParseCommandLine, ShortNamesStandForTheirFlags) {
  CommandLineRules rules;
  rules.short_names = {{'p', "test_path"}, {'s', "test_switch"}};
  absl::StatusOr<CommandLine> parsed = ParseCommandLine({"-p", "/x", "-s", "word"}, rules);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_test_path), "/x");
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_THAT(parsed->positional, ElementsAre("word"));
  ASSERT_TRUE(ParseCommandLine({"-p=/y"}, rules).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_path), "/y");
  // A letter is a short name only after one dash, and only the letters the program names.
  EXPECT_FALSE(ParseCommandLine({"--p", "/x"}, rules).ok());
  EXPECT_FALSE(ParseCommandLine({"-q"}, rules).ok());
  EXPECT_FALSE(ParseCommandLine({"-p", "/x"}).ok());
  EXPECT_THAT(FlagsHelp("usage", rules), HasSubstr("  -p, --test-path  a path"));
}

TEST(ParseCommandLine, ARepeatedFlagKeepsEveryValueWholeAndInOrder) {
  const std::string odd = "back\\slash\nnew line\xff";
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(
      {"--test-list", "/a,b", "--test-count=4", "--test-list=c", "-test-list", "", "--test-list",
       odd});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(absl::GetFlag(FLAGS_test_list).values, ElementsAre("/a,b", "c", "", odd));
  ASSERT_TRUE(ParseCommandLine({"--test-count=4"}).ok());
  EXPECT_THAT(absl::GetFlag(FLAGS_test_list).values, IsEmpty());
  EXPECT_THAT(FlagsHelp("usage"), HasSubstr("--test-list  a list (repeatable)\n"));
}

TEST(ParseCommandLine, GivenNamesTheFlagsTheCommandLineSetEvenToTheirDefault) {
  absl::StatusOr<CommandLine> parsed =
      ParseCommandLine({"--test-count=3", "--notest-switch", "--test-list=x"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->Given("test_count"));
  EXPECT_TRUE(parsed->Given("test_switch"));
  EXPECT_TRUE(parsed->Given("test_list"));
  EXPECT_FALSE(parsed->Given("test_path"));
  EXPECT_FALSE(parsed->Given("test_timeout"));
  EXPECT_THAT(ParseCommandLine({"word"})->given, IsEmpty());
}

TEST(ParseCommandLine, AnEnvironmentDefaultCountsAsGivenAndYieldsToTheFlag) {
  const char* path_var = "/from/env";
  CommandLineRules rules;
  rules.env_defaults = {{"test_path", "TEST_PATH"}};
  rules.getenv = [&path_var](const char* name) {
    return absl::string_view(name) == "TEST_PATH" ? path_var : nullptr;
  };
  absl::StatusOr<CommandLine> parsed = ParseCommandLine({}, rules);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_test_path), "/from/env");
  EXPECT_TRUE(parsed->Given("test_path"));
  ASSERT_TRUE(ParseCommandLine({"--test-path=/flag"}, rules).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_path), "/flag");
  path_var = "";  // set but empty: the default
  parsed = ParseCommandLine({}, rules);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_path), "/run/x");
  EXPECT_FALSE(parsed->Given("test_path"));
  EXPECT_THAT(FlagsHelp("usage", rules),
              HasSubstr("--test-path  a path (default: $TEST_PATH, else /run/x)"));
  // A repeated flag's environment default is one value, commas and all.
  path_var = "/a,b";
  rules.env_defaults = {{"test_list", "TEST_PATH"}};
  ASSERT_TRUE(ParseCommandLine({}, rules).ok());
  EXPECT_THAT(absl::GetFlag(FLAGS_test_list).values, ElementsAre("/a,b"));
}

TEST(ParseCommandLine, EveryValueIsCheckedInOrderAndARefusalEndsTheParse) {
  std::vector<std::pair<std::string, std::string>> seen;
  CommandLineRules rules;
  rules.check_value = [&seen](absl::string_view flag, absl::string_view value) {
    seen.emplace_back(flag, value);
    return value == "bad" ? absl::InvalidArgumentError("refused bad") : absl::OkStatus();
  };
  ASSERT_TRUE(ParseCommandLine({"one", "--test-path", "/p", "--test-switch", "--test-list=l",
                                "--", "two"},
                               rules)
                  .ok());
  EXPECT_THAT(seen, ElementsAre(Pair("", "one"), Pair("test_path", "/p"), Pair("test_list", "l"),
                                Pair("", "two")));
  seen.clear();
  absl::StatusOr<CommandLine> parsed =
      ParseCommandLine({"--test-path=bad", "--nope", "later"}, rules);
  EXPECT_EQ(parsed.status().message(), "refused bad");
  EXPECT_THAT(seen, ElementsAre(Pair("test_path", "bad")));
  EXPECT_EQ(ParseCommandLine({"--", "bad"}, rules).status().message(), "refused bad");
}

TEST(ParseCommandLine, AnUnknownFlagPointsAtTheProgramsHelp) {
  CommandLineRules rules;
  rules.program = "leash";
  EXPECT_EQ(ParseCommandLine({"--bogus"}, rules).status().message(),
            "unknown flag '--bogus'; see `leash --help`");
}

}  // namespace
}  // namespace leash
