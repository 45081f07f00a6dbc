#include "engine/named_lists.h"

#include <string>
#include <vector>

#include "engine/compiled_policy.h"
#include "engine/inert_entries.h"
#include "engine/path_entry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using leash::v1::Config;

constexpr char kSystem[] = "/etc/leash/lists/system";

std::vector<std::string> Entries(const leash::v1::EntryList& list) {
  return {list.entries().begin(), list.entries().end()};
}

TEST(ListReference, NameOrPathInTheListFolder) {
  EXPECT_EQ(*ListFilePath("@system"), kSystem);
  EXPECT_EQ(*ListFilePath("@/etc/leash/lists/system"), kSystem);
  EXPECT_EQ(*ListFilePath("@package-registries"), "/etc/leash/lists/package-registries");
  for (const char* bad : {"@", "@System", "@../shadow", "@a/b", "@/etc/shadow",
                          "@/etc/leash/lists/../leash.yaml", "@/etc/leash/lists/", "@ system",
                          "system"}) {
    EXPECT_FALSE(ListFilePath(bad).ok()) << bad;
  }
}

TEST(ListText, CommentsAndBlankLinesAreSkippedAndLinesAreNumbered) {
  absl::StatusOr<std::vector<ListLine>> lines =
      ParseListText("# the system\n\n  /usr  \n#/etc/shadow\n/etc/hosts\n");
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0].entry, "/usr");
  EXPECT_EQ((*lines)[0].line, 3);
  EXPECT_EQ((*lines)[1].entry, "/etc/hosts");
  EXPECT_EQ((*lines)[1].line, 5);
}

TEST(ListText, AListCannotNameAnotherList) {
  absl::StatusOr<std::vector<ListLine>> lines = ParseListText("/usr\n@github\n");
  ASSERT_FALSE(lines.ok());
  EXPECT_THAT(std::string(lines.status().message()), HasSubstr("line 2"));
}

Config WithFilesystemAllow(std::vector<std::string> entries) {
  Config c;
  c.mutable_filesystem()->set_mode(leash::v1::MODE_WHITELIST);
  for (const std::string& e : entries) c.mutable_filesystem()->mutable_allow()->add_entries(e);
  return c;
}

TEST(ExpandLists, AReferenceIsReplacedInPlaceByTheListsEntries) {
  Config c = WithFilesystemAllow({"/home/fido/work", "@system", "/tmp/fido"});
  c.mutable_network()->mutable_allow()->add_entries("@github");
  c.mutable_network()->mutable_deny()->add_entries("gist.github.com");
  ListTexts texts;
  texts[kSystem] = std::string("# read-only needs\n/usr\n/etc/hosts\n");
  texts["/etc/leash/lists/github"] = std::string("github.com\napi.github.com:443\n");
  absl::StatusOr<Config> expanded = ExpandLists(c, texts);
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  EXPECT_THAT(Entries(expanded->filesystem().allow()),
              ElementsAre("/home/fido/work", "/usr", "/etc/hosts", "/tmp/fido"));
  EXPECT_THAT(Entries(expanded->network().allow()), ElementsAre("github.com", "api.github.com:443"));
  EXPECT_THAT(Entries(expanded->network().deny()), ElementsAre("gist.github.com"));
  const CompiledPolicy policy = CompiledPolicy::Compile(*expanded);
  EXPECT_TRUE(policy.DecidePath("/usr/bin/git").allowed());
  EXPECT_FALSE(policy.DecidePath("/etc/shadow").allowed());
  EXPECT_TRUE(policy.skipped_entries().empty());
}

TEST(ExpandLists, AnUnreadableListFailsTheSubjectNamingTheList) {
  ListTexts texts;
  texts[kSystem] = absl::PermissionDeniedError("owned by uid 1000, not root");
  absl::StatusOr<Config> expanded = ExpandLists(WithFilesystemAllow({"@system"}), texts);
  ASSERT_FALSE(expanded.ok());
  EXPECT_EQ(expanded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr(kSystem));
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr("owned by uid 1000"));
  // A list nobody read (not handed in) fails the same way, never expands to nothing.
  EXPECT_FALSE(ExpandLists(WithFilesystemAllow({"@system"}), {}).ok());
}

TEST(ExpandLists, AnInvalidEntryFailsTheSubjectNamingTheListAndTheLine) {
  ListTexts texts;
  texts[kSystem] = std::string("/usr\n\n~/secrets\n");
  absl::StatusOr<Config> expanded = ExpandLists(WithFilesystemAllow({"@system"}), texts);
  ASSERT_FALSE(expanded.ok());
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr(kSystem));
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr("line 3"));
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr("~/secrets"));
}

TEST(ExpandLists, EntriesAreJudgedByTheGrammarOfTheFieldTheyAreExpandedInto) {
  ListTexts texts;
  texts[kSystem] = std::string("/usr\n");
  Config c;
  c.mutable_network()->mutable_allow()->add_entries("@system");
  absl::StatusOr<Config> expanded = ExpandLists(c, texts);
  ASSERT_FALSE(expanded.ok());
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr("network.allow"));
  EXPECT_THAT(std::string(expanded.status().message()), HasSubstr("line 1"));
}

TEST(ExpandLists, AListInADenyListDeniesEveryEntry) {
  Config c;
  c.mutable_filesystem()->set_mode(leash::v1::MODE_BLACKLIST);
  c.mutable_filesystem()->mutable_deny()->add_entries("@secrets");
  ListTexts texts;
  texts["/etc/leash/lists/secrets"] = std::string("/srv/keys\n/home/*/.ssh\n");
  absl::StatusOr<Config> expanded = ExpandLists(c, texts);
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  const CompiledPolicy policy = CompiledPolicy::Compile(*expanded);
  EXPECT_FALSE(policy.DecidePath("/home/fido/.ssh/id_ed25519").allowed());
  EXPECT_FALSE(policy.DecidePath("/srv/keys/a").allowed());
  EXPECT_TRUE(policy.DecidePath("/srv/www").allowed());
}

TEST(ListFilesUsed, EveryWellFormedReferenceOnce) {
  Config c = WithFilesystemAllow({"@system", "/x", "@/etc/leash/lists/system", "@Bad"});
  c.mutable_network()->mutable_allow()->add_entries("@github");
  EXPECT_THAT(ListFilesUsed(c), ElementsAre("/etc/leash/lists/github", kSystem));
}

TEST(InertEntries, AWellFormedReferenceIsNotInertAMalformedOneIs) {
  Config c = WithFilesystemAllow({"@system", "@../../etc/shadow"});
  c.mutable_network()->mutable_allow()->add_entries("@github");
  const std::vector<leash::v1::InertEntry> inert = InertEntries(c);
  ASSERT_EQ(inert.size(), 1u);
  EXPECT_EQ(inert[0].entry(), "@../../etc/shadow");
}

TEST(InertEntries, AListInCommandsOrToolsCanNeverMatch) {
  // Never a binary called "@system": a subject could name its own copy so.
  EXPECT_FALSE(ParseCommandEntry("@system").ok());
  EXPECT_FALSE(ParseToolEntry("@tools").ok());
  Config c;
  c.mutable_commands()->mutable_deny()->add_entries("@dangerous");
  const std::vector<leash::v1::InertEntry> inert = InertEntries(c);
  ASSERT_EQ(inert.size(), 1u);
  EXPECT_TRUE(IsInertDeny(inert[0]));
  EXPECT_THAT(inert[0].reason(), HasSubstr("network and filesystem"));
}

TEST(ValidateLists, ShowsEachListItsSizeAndThatAnEditLoosensItsSubjects) {
  ListTexts texts;
  texts[kSystem] = std::string("/usr\n/etc/hosts\n");
  std::vector<leash::v1::Finding> findings =
      ValidateLists(WithFilesystemAllow({"@system"}), "floor", texts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity(), leash::v1::SEVERITY_INFO);
  EXPECT_EQ(findings[0].entry(), "@system");
  EXPECT_THAT(findings[0].message(), HasSubstr("2 entries"));
  EXPECT_THAT(findings[0].message(), HasSubstr("adds entries widens every subject"));
  texts[kSystem] = absl::NotFoundError("no such file");
  findings = ValidateLists(WithFilesystemAllow({"@system"}), "floor", texts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity(), leash::v1::SEVERITY_CRITICAL);
}

}  // namespace
}  // namespace leash::engine
