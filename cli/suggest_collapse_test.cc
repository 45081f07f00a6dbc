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

INSTANTIATE_TEST_SUITE_P(
    Table, CollapseNetworkTest,
    ::testing::Values(
        NetworkCase{"one_name_stays_exact", {"api.github.com:443"}, {"api.github.com:443"}},
        NetworkCase{"two_siblings_become_their_parent_wildcard",
                    {"api.github.com:443", "uploads.github.com:443"},
                    {"*.github.com:443"}},
        NetworkCase{"parent_seen_too_becomes_the_parent",
                    {"github.com:443", "api.github.com:443"},
                    {"github.com:443"}},
        NetworkCase{"never_a_bare_tld", {"example.com:443", "github.com:443"},
                    {"example.com:443", "github.com:443"}},
        NetworkCase{"never_a_two_label_name_under_a_country_code",
                    {"a.co.uk:443", "b.co.uk:443", "foo.github.io:443", "bar.github.io:443"},
                    {"a.co.uk:443", "b.co.uk:443", "bar.github.io:443", "foo.github.io:443"}},
        NetworkCase{"three_labels_under_a_country_code_may_collapse",
                    {"a.example.co.uk:443", "b.example.co.uk:443"},
                    {"*.example.co.uk:443"}},
        NetworkCase{"ports_are_never_joined", {"api.github.com:443", "uploads.github.com:80"},
                    {"api.github.com:443", "uploads.github.com:80"}},
        NetworkCase{"narrowest_cover_upward",
                    {"a.x.example.com:443", "b.x.example.com:443", "c.example.com:443",
                     "other.org:443"},
                    {"*.example.com:443", "other.org:443"}},
        NetworkCase{"deeper_siblings_stay_under_their_own_parent",
                    {"a.x.example.com:443", "b.x.example.com:443"},
                    {"*.x.example.com:443"}},
        NetworkCase{"addresses_stay_exact",
                    {"192.0.2.7/32:443", "192.0.2.8/32:443", "[2001:db8::1/128]:443"},
                    {"192.0.2.7/32:443", "192.0.2.8/32:443", "[2001:db8::1/128]:443"}}),
    [](const ::testing::TestParamInfo<NetworkCase>& info) { return info.param.name; });

TEST(CollapseNetwork, CollapsedEntrySumsCountsAndNamesWhatItCovers) {
  const std::vector<SuggestedEntry> entries =
      CollapseNetwork(Seen({"api.github.com:443", "uploads.github.com:443"}));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].count, 4u);
  EXPECT_EQ(entries[0].example_ref, "ref-api.github.com:443");
  EXPECT_THAT(entries[0].covers, ElementsAre("api.github.com:443", "uploads.github.com:443"));
}

struct PathCase {
  const char* name;
  std::vector<std::string> seen;
  std::vector<std::string> want;
  std::vector<std::string> left_out;
};

class CollapsePathsTest : public ::testing::TestWithParam<PathCase> {};

TEST_P(CollapsePathsTest, Collapses) {
  const PathSuggestion got = CollapsePaths(Seen(GetParam().seen));
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
        // The log writes a byte that is not UTF-8 as the text \xNN: not the file's name.
        PathCase{"names_the_log_escaped_are_left_out",
                 {"/srv/p/bad\\xff", "/srv/p/a", "/srv/p/b"},
                 {"/srv/p/a", "/srv/p/b"},
                 {"/srv/p/bad\\xff"}}),
    [](const ::testing::TestParamInfo<PathCase>& info) { return info.param.name; });

TEST(CollapsePaths, LeftOutSaysWhy) {
  const PathSuggestion got = CollapsePaths(Seen({"/etc"}));
  ASSERT_EQ(got.left_out.size(), 1u);
  EXPECT_THAT(got.left_out[0].left_out_because, ::testing::HasSubstr("whole tree"));
  EXPECT_THAT(got.entries, IsEmpty());
}

TEST(ExactEntries, OnePerKey) {
  EXPECT_EQ(Entries(ExactEntries(Seen({"/usr/bin/git", "/usr/bin/ls"}))),
            (std::vector<std::string>{"/usr/bin/git", "/usr/bin/ls"}));
}

}  // namespace
}  // namespace leash::cli
