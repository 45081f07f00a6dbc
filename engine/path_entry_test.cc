#include "engine/path_entry.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "re2/re2.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;

struct PathCase {
  const char* name;
  const char* entry;
  bool ok;
  const char* expect;  // normalized path when ok, reason fragment when not
  PathEntry::Kind kind;
};

class PathEntryGrammar : public ::testing::TestWithParam<PathCase> {};

TEST_P(PathEntryGrammar, Judges) {
  const PathCase& c = GetParam();
  absl::StatusOr<PathEntry> entry = ParsePathEntry(c.entry);
  if (c.ok) {
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_EQ(entry->path, c.expect);
    EXPECT_EQ(entry->kind, c.kind);
  } else {
    ASSERT_FALSE(entry.ok());
    EXPECT_THAT(std::string(entry.status().message()), HasSubstr(c.expect));
  }
}

using PK = PathEntry::Kind;
INSTANTIATE_TEST_SUITE_P(
    Grammar, PathEntryGrammar,
    ::testing::Values(
        PathCase{"Absolute", "/home/fido/work", true, "/home/fido/work", PK::kPrefix},
        PathCase{"TrailingSlashDropped", "/home/fido/work/", true, "/home/fido/work",
                 PK::kPrefix},
        PathCase{"RepeatedSlashesCollapsed", "/home//fido///work", true, "/home/fido/work",
                 PK::kPrefix},
        PathCase{"Root", "/", true, "/", PK::kPrefix},
        PathCase{"Glob", "/home/*/.ssh", true, "/home/*/.ssh", PK::kGlob},
        PathCase{"DoubleStarGlob", "/srv/**/*.pem", true, "/srv/**/*.pem", PK::kGlob},
        PathCase{"ClassGlob", "/tmp/[abc]?.log", true, "/tmp/[abc]?.log", PK::kGlob},
        PathCase{"RelativeIsInert", "home/fido", false, "relative path", PK::kPrefix},
        PathCase{"TildeIsInert", "~/work", false, "'~' is not expanded", PK::kPrefix},
        PathCase{"DotDotIsInert", "/home/fido/../root", false, "'..' segment", PK::kPrefix},
        PathCase{"DotIsInert", "/home/./fido", false, "'.' segment", PK::kPrefix},
        PathCase{"EmptyIsInert", "", false, "empty", PK::kPrefix},
        PathCase{"LeadingWhitespaceIsInert", " /etc", false, "whitespace", PK::kPrefix},
        PathCase{"UnclosedClassIsInert", "/tmp/[abc", false, "closing ']'", PK::kPrefix},
        PathCase{"BadRangeIsInert", "/tmp/[z-a]", false, "not a valid pattern", PK::kPrefix}),
    [](const auto& info) { return std::string(info.param.name); });

struct CommandCase {
  const char* name;
  const char* entry;
  bool ok;
  const char* expect;
  bool is_path;
};

class CommandEntryGrammar : public ::testing::TestWithParam<CommandCase> {};

TEST_P(CommandEntryGrammar, Judges) {
  const CommandCase& c = GetParam();
  absl::StatusOr<CommandEntry> entry = ParseCommandEntry(c.entry);
  if (c.ok) {
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_EQ(entry->value, c.expect);
    EXPECT_EQ(entry->is_path, c.is_path);
  } else {
    ASSERT_FALSE(entry.ok());
    EXPECT_THAT(std::string(entry.status().message()), HasSubstr(c.expect));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, CommandEntryGrammar,
    ::testing::Values(
        CommandCase{"Basename", "ssh", true, "ssh", false},
        CommandCase{"AbsolutePath", "/usr/bin/ssh", true, "/usr/bin/ssh", true},
        CommandCase{"AbsolutePathCollapsed", "/usr//bin/ssh", true, "/usr/bin/ssh", true},
        CommandCase{"RelativePathIsInert", "bin/ssh", false, "relative path", false},
        CommandCase{"DotSlashIsInert", "./ssh", false, "relative path", false},
        CommandCase{"CommandLineIsInert", "rm -rf", false, "not a command line", false},
        CommandCase{"PatternIsInert", "ssh*", false, "patterns are not supported", false},
        CommandCase{"DotDotSegmentIsInert", "/usr/bin/../sbin/x", false, "'..' segment", false},
        CommandCase{"EmptyIsInert", "", false, "empty", false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ToolEntryGrammar, ExactNameParses) { EXPECT_EQ(*ParseToolEntry("read_file"), "read_file"); }

TEST(ToolEntryGrammar, WhitespaceIsInert) {
  EXPECT_THAT(std::string(ParseToolEntry("read file").status().message()),
              HasSubstr("exact name"));
}

TEST(IsNormalAbsolutePath, AgreesWithNormalizeAbsolutePath) {
  for (absl::string_view path :
       {"/", "/a", "/a/b", "/a/b/", "//a", "/a//b", "/./a", "/a/.", "/a/..", "/..", "/a/../b",
        "/a/.b", "/a/..b", "/a/b..", "/.a/...", "a/b", "", ".", "/a/b/c.txt"}) {
    absl::StatusOr<std::string> normalized = NormalizeAbsolutePath(path);
    EXPECT_EQ(IsNormalAbsolutePath(path), normalized.ok() && *normalized == path) << path;
  }
}

TEST(NormalizeAbsolutePath, AppliesDotsAndSlashes) {
  EXPECT_EQ(*NormalizeAbsolutePath("/a/./b//c/../d/"), "/a/b/d");
  EXPECT_EQ(*NormalizeAbsolutePath("/../../etc"), "/etc");
  EXPECT_EQ(*NormalizeAbsolutePath("/"), "/");
  EXPECT_FALSE(NormalizeAbsolutePath("etc/passwd").ok());
}

struct GlobCase {
  const char* glob;
  const char* path;
  bool matches;
};

class GlobMatching : public ::testing::TestWithParam<GlobCase> {};

TEST_P(GlobMatching, Matches) {
  const GlobCase& c = GetParam();
  RE2 regex(GlobToRegex(c.glob));
  ASSERT_TRUE(regex.ok()) << regex.error();
  EXPECT_EQ(RE2::FullMatch(c.path, regex), c.matches) << c.glob << " vs " << c.path;
}

INSTANTIATE_TEST_SUITE_P(
    Glob, GlobMatching,
    ::testing::Values(GlobCase{"/home/*/.ssh", "/home/fido/.ssh", true},
                      GlobCase{"/home/*/.ssh", "/home/fido/.ssh/id_rsa", true},
                      GlobCase{"/home/*/.ssh", "/home/a/b/.ssh", false},
                      GlobCase{"/home/*/.ssh", "/home/fido/.sshx", false},
                      GlobCase{"/srv/**/*.pem", "/srv/a/b/c/key.pem", true},
                      GlobCase{"/srv/**/*.pem", "/srv/key.pem", true},
                      GlobCase{"/srv/**/*.pem", "/srv/key.pemx", false},
                      GlobCase{"/tmp/?.log", "/tmp/a.log", true},
                      GlobCase{"/tmp/?.log", "/tmp/ab.log", false},
                      GlobCase{"/tmp/[!a]", "/tmp/b", true},
                      GlobCase{"/tmp/[!a]", "/tmp/a", false},
                      GlobCase{"/tmp/a.b", "/tmp/axb", false}));

}  // namespace
}  // namespace leash::engine
