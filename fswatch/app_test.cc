// leash-fswatch's flags and refusals, without starting anything.
#include "fswatch/app.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::fswatch {
namespace {

using ::testing::HasSubstr;

TEST(ParseFlags, ProductionDefaults) {
  absl::StatusOr<Flags> flags = ParseFlags({});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->socket_path, "/run/leash/leash.sock");
  EXPECT_EQ(flags->decision_log_fd, -1);
  EXPECT_TRUE(flags->mark_only_under.empty());
  EXPECT_FALSE(flags->test_faults);
}

TEST(ParseFlags, ReadsEveryFlag) {
  absl::StatusOr<Flags> flags =
      ParseFlags({"--socket=/run/x.sock", "--decision-log-fd=7", "--initial-map=/tmp/m.bin",
                  "--mark-only-under=/tmp/t//", "--identity=proc-status"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->socket_path, "/run/x.sock");
  EXPECT_EQ(flags->decision_log_fd, 7);
  EXPECT_EQ(flags->mark_only_under, "/tmp/t");
  EXPECT_EQ(flags->identity, "proc-status");
  EXPECT_FALSE(flags->test_faults);
}

#ifdef LEASH_FSWATCH_TEST_FAULTS
// The testonly leash-fswatch-with-test-faults: the fault hooks, with a test start only.
TEST(ParseFlags, TheTestBuildTakesTestFaultsWithATestStart) {
  absl::StatusOr<Flags> flags =
      ParseFlags({"--initial-map=/tmp/m.bin", "--mark-only-under=/tmp/t", "--test-faults"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->test_faults);
  EXPECT_THAT(ParseFlags({"--test-faults"}).status().message(), HasSubstr("only honoured with"));
}
#else
// The leash-fswatch that ships has no fault hooks: the flag that would turn them on is unknown.
TEST(ParseFlags, TheShippedBuildHasNoTestFaults) {
  absl::StatusOr<Flags> flags =
      ParseFlags({"--initial-map=/tmp/m.bin", "--mark-only-under=/tmp/t", "--test-faults"});
  EXPECT_TRUE(absl::IsInvalidArgument(flags.status()));
  EXPECT_THAT(flags.status().message(), HasSubstr("unknown flag '--test-faults'"));
}
#endif

TEST(ParseFlags, ReadsTheSharedGroupFlagsLeashdPasses) {
  absl::StatusOr<Flags> flags = ParseFlags(
      {"--fanotify-fd=4", "--pending-table-fd=5", "--standby", "--ready-fd=6"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->fanotify_fd, 4);
  EXPECT_EQ(flags->pending_table_fd, 5);
  EXPECT_TRUE(flags->standby);
  EXPECT_EQ(flags->ready_fd, 6);
}

struct BadFlags {
  const char* rule;
  std::vector<std::string> args;
  const char* fragment;
};

class ParseFlagsRefuses : public ::testing::TestWithParam<BadFlags> {};

TEST_P(ParseFlagsRefuses, WithTheFix) {
  absl::StatusOr<Flags> flags = ParseFlags(GetParam().args);
  EXPECT_TRUE(absl::IsInvalidArgument(flags.status())) << GetParam().rule;
  EXPECT_THAT(flags.status().message(), HasSubstr(GetParam().fragment)) << GetParam().rule;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ParseFlagsRefuses,
    ::testing::Values(
        BadFlags{"initial map without a confinement", {"--initial-map=/m"},
                 "needs --mark-only-under"},
        BadFlags{"confinement to / confines nothing", {"--mark-only-under=/"},
                 "confines nothing"},
        BadFlags{"relative confinement", {"--mark-only-under=tmp"}, "absolute directory"},
        BadFlags{"bad descriptor", {"--decision-log-fd=x"}, "--decision-log-fd=x: expected a whole number"},
        BadFlags{"negative descriptor", {"--decision-log-fd=-3"}, "not a descriptor number"},
        BadFlags{"unknown identity", {"--identity=euid"}, "not one of best, proc-status"},
        BadFlags{"empty value", {"--socket="}, "needs a value"},
        BadFlags{"unknown flag", {"--mark=/"}, "unknown flag '--mark=/'"},
        BadFlags{"a shared group without its table", {"--fanotify-fd=4"}, "go together"},
        BadFlags{"a table without its group", {"--pending-table-fd=5"}, "go together"},
        BadFlags{"a standby of nothing", {"--standby"}, "needs --fanotify-fd"},
        BadFlags{"a ready pipe for a reader",
                 {"--fanotify-fd=4", "--pending-table-fd=5", "--ready-fd=6"},
                 "only written by a --standby"},
        BadFlags{"bad group descriptor", {"--fanotify-fd=-2", "--pending-table-fd=5"},
                 "not a descriptor number"},
        BadFlags{"an argument that is not a flag", {"stray"}, "unexpected argument 'stray'"}));

TEST(ParseFlags, HelpIsAskedFor) {
  absl::StatusOr<Flags> flags = ParseFlags({"--help"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->help);
}

TEST(CheckKernelRelease, RefusesBeforeFiveZero) {
  absl::Status old = CheckKernelRelease("4.19.0-21-amd64");
  EXPECT_TRUE(absl::IsFailedPrecondition(old));
  EXPECT_THAT(old.message(), HasSubstr("needs Linux >= 5.0"));
  EXPECT_THAT(old.message(), HasSubstr("4.19.0-21-amd64"));
  EXPECT_TRUE(CheckKernelRelease("5.0.0").ok());
  EXPECT_TRUE(CheckKernelRelease("6.18.44-fc-v782").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckKernelRelease("garbage")));
}

}  // namespace
}  // namespace leash::fswatch
