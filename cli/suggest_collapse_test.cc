#include "cli/suggest_collapse.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

SeenMap Seen(const std::vector<std::string>& keys) {
  SeenMap seen;
  for (const std::string& key : keys) {
    leash::cli::Seen& s = seen[key];
    s.count = 2;
    s.example_ref = "ref-" + key;
  }
  return seen;
}

std::vector<std::string> Entries(const std::vector<SuggestedEntry>& entries) {
  std::vector<std::string> out;
  for (const SuggestedEntry& entry : entries) out.push_back(entry.entry);
  return out;
}

struct NetworkCase {
  const char* name;
  std::vector<std::string> seen;
  std::vector<std::string> want;
};

class CollapseNetworkTest : public ::testing::TestWithParam<NetworkCase> {};

TEST_P(CollapseNetworkTest, Collapses) {
  EXPECT_EQ(Entries(CollapseNetwork(Seen(GetParam().seen))), GetParam().want);
}

// Every name is the agent's to send: never joined into a parent or a wildcard.
INSTANTIATE_TEST_SUITE_P(
    Table, CollapseNetworkTest,
    ::testing::Values(
        NetworkCase{"one_name_stays_exact", {"api.github.com:443"}, {"api.github.com:443"}},
        NetworkCase{"two_siblings_stay_two_entries",
                    {"a1.herokuapp.com:8080", "b2.herokuapp.com:8080"},
                    {"a1.herokuapp.com:8080", "b2.herokuapp.com:8080"}},
        NetworkCase{"a_parent_seen_too_stays_beside_its_child",
                    {"github.com:443", "api.github.com:443"},
                    {"api.github.com:443", "github.com:443"}},
        NetworkCase{"many_names_under_one_parent_stay_apart",
                    {"a.x.example.com:443", "b.x.example.com:443", "c.example.com:443"},
                    {"a.x.example.com:443", "b.x.example.com:443", "c.example.com:443"}},
        NetworkCase{"ports_are_never_joined", {"api.github.com:443", "api.github.com:80"},
                    {"api.github.com:443", "api.github.com:80"}},
        NetworkCase{"addresses_stay_exact",
                    {"192.0.2.7/32:443", "192.0.2.8/32:443", "[2001:db8::1/128]:443"},
                    {"192.0.2.7/32:443", "192.0.2.8/32:443", "[2001:db8::1/128]:443"}}),
    [](const ::testing::TestParamInfo<NetworkCase>& info) { return info.param.name; });

TEST(CollapseNetwork, NeverAWildcardFromNamesTheAgentSent) {
  const std::vector<SuggestedEntry> entries =
      CollapseNetwork(Seen({"a1.herokuapp.com:8080", "b2.herokuapp.com:8080"}));
  ASSERT_EQ(entries.size(), 2u);
  for (const SuggestedEntry& entry : entries) {
    EXPECT_EQ(entry.count, 2u);
    EXPECT_THAT(entry.covers, ElementsAre(entry.entry));
  }
}

struct PathCase {
  const char* name;
  std::vector<std::string> seen;
  std::vector<std::string> want;
  std::vector<std::string> left_out;
};

// Every folder may become an entry (no account but root could have named what is in it).
std::string RootsFolder(const std::string&) { return ""; }

class CollapsePathsTest : public ::testing::TestWithParam<PathCase> {};

TEST_P(CollapsePathsTest, Collapses) {
  const PathSuggestion got = CollapsePaths(Seen(GetParam().seen), RootsFolder);
  EXPECT_EQ(Entries(got.entries), GetParam().want);
  EXPECT_EQ(Entries(got.left_out), GetParam().left_out);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CollapsePathsTest,
    ::testing::Values(
        PathCase{"two_files_stay_exact", {"/home/u/work/a", "/home/u/work/b"},
                 {"/home/u/work/a", "/home/u/work/b"}, {}},
        PathCase{"three_files_become_their_folder",
                 {"/home/u/work/a", "/home/u/work/b", "/home/u/work/c", "/home/u/other"},
                 {"/home/u/other", "/home/u/work"}, {}},
        PathCase{"collapsed_folders_count_as_branches",
                 {"/srv/p/a/1", "/srv/p/a/2", "/srv/p/a/3", "/srv/p/b/1", "/srv/p/b/2",
                  "/srv/p/b/3", "/srv/p/c"},
                 {"/srv/p"}, {}},
        PathCase{"never_collapses_to_a_top_level_folder",
                 {"/etc/group", "/etc/hosts", "/etc/passwd"},
                 {"/etc/group", "/etc/hosts", "/etc/passwd"}, {}},
        PathCase{"a_seen_folder_covers_what_is_under_it",
                 {"/home/u/work", "/home/u/work/a", "/home/u/work/sub/b"}, {"/home/u/work"}, {}},
        PathCase{"top_level_and_glob_names_are_left_out",
                 {"/", "/tmp", "/tmp/x/a*b", "/tmp/x/plain"}, {"/tmp/x/plain"},
                 {"/", "/tmp", "/tmp/x/a*b"}},
        PathCase{"dot_and_dot_dot_names_are_left_out",
                 {"/srv/p/../q/a", "/srv/p/./b", "/srv//p/c", "/srv/p/d"},
                 {"/srv/p/d"},
                 {"/srv//p/c", "/srv/p/../q/a", "/srv/p/./b"}},
        // The log writes a byte that is not UTF-8 as the text \xNN: not the file's name.
        PathCase{"names_the_log_escaped_are_left_out",
                 {"/srv/p/bad\\xff", "/srv/p/a", "/srv/p/b"},
                 {"/srv/p/a", "/srv/p/b"},
                 {"/srv/p/bad\\xff"}}),
    [](const ::testing::TestParamInfo<PathCase>& info) { return info.param.name; });

TEST(CollapsePaths, LeftOutSaysWhy) {
  const PathSuggestion got = CollapsePaths(Seen({"/etc"}), RootsFolder);
  ASSERT_EQ(got.left_out.size(), 1u);
  EXPECT_THAT(got.left_out[0].left_out_because, ::testing::HasSubstr("whole tree"));
  EXPECT_THAT(got.entries, IsEmpty());
}

// Files the agent made are names of its choosing: a folder entry built from them would allow
// whatever else it puts there, the same wildcard as a host's.
TEST(CollapsePaths, NeverAFolderTheAgentCouldHaveFilled) {
  std::vector<std::string> asked;
  const PathSuggestion got = CollapsePaths(
      Seen({"/home/u/work/a", "/home/u/work/b", "/home/u/work/c"}),
      [&](const std::string& folder) {
        asked.push_back(folder);
        return std::string("the folder /home/u/work is owned by uid 2001");
      });
  EXPECT_EQ(Entries(got.entries),
            (std::vector<std::string>{"/home/u/work/a", "/home/u/work/b", "/home/u/work/c"}));
  EXPECT_THAT(asked, ElementsAre("/home/u/work"));
  EXPECT_THAT(got.kept_apart,
              ElementsAre("the paths under /home/u/work stay separate entries, not that folder: "
                          "the folder /home/u/work is owned by uid 2001"));
}

TEST(ExactEntries, OnePerKey) {
  EXPECT_EQ(Entries(ExactEntries(Seen({"/usr/bin/git", "/usr/bin/ls"}))),
            (std::vector<std::string>{"/usr/bin/git", "/usr/bin/ls"}));
}

}  // namespace
}  // namespace leash::cli
