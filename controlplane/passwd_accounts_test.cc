#include "controlplane/passwd_accounts.h"

#include <pwd.h>

#include <algorithm>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/temp_dir.h"
#include "test/fixtures/test_account.h"

namespace leash::controlplane {
namespace {

// The account's identity; its subordinate ranges are whatever useradd gave it.
MATCHER_P3(IsAccount, name, uid, gid, "") {
  return arg.name == name && arg.uid == uid && arg.gid == gid;
}

TEST(PasswdAccounts, ListsOnlyLeashPrefixedAccountsWithTheirUids) {
  LEASH_REQUIRE_ROOT();
  auto agent = leash::testing::TestAccount::Create("leash-pwtest");
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto other = leash::testing::TestAccount::Create("pwtest-leash");
  ASSERT_TRUE(other.ok()) << other.status();
  PasswdAccounts source;
  absl::StatusOr<std::vector<Account>> accounts = source.ListAgentAccounts();
  ASSERT_TRUE(accounts.ok()) << accounts.status();
  EXPECT_THAT(*accounts,
              ::testing::Contains(IsAccount("leash-pwtest", (*agent)->uid(), (*agent)->gid())));
  for (const Account& a : *accounts) {
    EXPECT_EQ(a.name.rfind("leash-", 0), 0u) << a.name;
  }
}

TEST(AccountNameAsText, KeepsTextAndEscapesStrayBytesAndBackslashes) {
  EXPECT_EQ(AccountNameAsText("leash-fido"), "leash-fido");
  EXPECT_EQ(AccountNameAsText("leash-caf\xc3\xa9"), "leash-caf\xc3\xa9");  // UTF-8: as it is
  EXPECT_EQ(AccountNameAsText("leash-a\xff"), "leash-a\\xff");
  EXPECT_EQ(AccountNameAsText("leash-a\\b"), "leash-a\\x5cb");
  // A stray byte and the four characters that would show it never read the same.
  EXPECT_NE(AccountNameAsText("leash-a\xff"), AccountNameAsText("leash-a\\xff"));
  EXPECT_EQ(AccountNameAsText("leash-a\\xff"), "leash-a\\x5cxff");
}

TEST(DistinctAgentAccounts, KeepsAnAccountListedTwiceOnceAndSortsByName) {
  std::vector<std::string> warnings;
  const std::vector<Account> accounts = DistinctAgentAccounts(
      {{"leash-b", 1002, 1002}, {"leash-a", 1001, 1001}, {"leash-b", 1002, 1002}}, warnings);
  EXPECT_THAT(accounts, ::testing::ElementsAre(Account{"leash-a", 1001, 1001},
                                               Account{"leash-b", 1002, 1002}));
  EXPECT_TRUE(warnings.empty());
}

TEST(DistinctAgentAccounts, ANameUnderTwoUidsLeavesNeitherUnconfined) {
  // Before, the second was dropped: UID 1003 ran as an agent and was confined by nothing.
  std::vector<std::string> warnings;
  const std::vector<Account> accounts = DistinctAgentAccounts(
      {{"leash-a", 1003, 1003}, {"leash-a", 1001, 1001}, {"leash-b", 1002, 1002}}, warnings);
  EXPECT_THAT(accounts, ::testing::ElementsAre(Account{"leash-a", 1001, 1001},
                                               Account{"leash-a~uid1003", 1003, 1003},
                                               Account{"leash-b", 1002, 1002}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the account database lists leash-a under uid 1001 and uid 1003; uid 1003 is "
            "confined as leash-a~uid1003 (the floor only: no binding names it) until the "
            "duplicate is removed (`getent passwd 1001 1003` shows both)");
}

TEST(DistinctAgentAccounts, TheNameGivenToADuplicateIsNeverAnotherAccountsName) {
  std::vector<std::string> warnings;
  const std::vector<Account> accounts = DistinctAgentAccounts(
      {{"leash-a", 1001, 1001}, {"leash-a", 1003, 1003}, {"leash-a~uid1003", 1004, 1004}},
      warnings);
  EXPECT_THAT(accounts, ::testing::ElementsAre(Account{"leash-a", 1001, 1001},
                                               Account{"leash-a~uid1003", 1004, 1004},
                                               Account{"leash-a~uid1003~", 1003, 1003}));
}

TEST(DistinctAgentAccounts, OneUidUnderTwoNamesIsOneSubjectUnderTheFirstName) {
  std::vector<std::string> warnings;
  const std::vector<Account> accounts = DistinctAgentAccounts(
      {{"leash-zed", 1002, 1002}, {"leash-amy", 1002, 1002}, {"leash-b", 1003, 1003}}, warnings);
  EXPECT_THAT(accounts, ::testing::ElementsAre(Account{"leash-amy", 1002, 1002},
                                               Account{"leash-b", 1003, 1003}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the account database names uid 1002 both leash-amy and leash-zed; it is one "
            "subject, enforced as leash-amy (the first by name) until one name is removed");
}

TEST(PasswdAccounts, TwoNamesThatDifferOnlyInHowTheyWouldBeEscapedStayTwoSubjects) {
  LEASH_REQUIRE_ROOT();
  // One name holds the byte 0xff, the other the four characters \xff: both real accounts.
  auto raw = leash::testing::TestAccount::Create("leash-pwesc\xff");
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto literal = leash::testing::TestAccount::Create("leash-pwesc\\xff");
  ASSERT_TRUE(literal.ok()) << literal.status();
  PasswdAccounts source;
  absl::StatusOr<std::vector<Account>> accounts = source.ListAgentAccounts();
  ASSERT_TRUE(accounts.ok()) << accounts.status();
  EXPECT_THAT(*accounts, ::testing::Contains(
                             IsAccount("leash-pwesc\\xff", (*raw)->uid(), (*raw)->gid())));
  EXPECT_THAT(*accounts, ::testing::Contains(IsAccount("leash-pwesc\\x5cxff", (*literal)->uid(),
                                                       (*literal)->gid())));
}

TEST(PasswdAccounts, EachAccountCarriesTheSubordinateRangesItsNameOrUidHolds) {
  LEASH_REQUIRE_ROOT();
  auto agent = leash::testing::TestAccount::Create("leash-pwsub");
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto bystander = leash::testing::TestAccount::Create("pwsub-other");
  ASSERT_TRUE(bystander.ok()) << bystander.status();
  auto dir = *leash::testing::TempDir::Create("pwsub");
  const uint32_t uid = (*agent)->uid();
  std::ofstream(dir->Join("subuid")) << "leash-pwsub:500000:10\n" << uid << ":600000:5\n"
                                      << "leash-pwsub:7x:1\n";
  std::ofstream(dir->Join("subgid")) << "leash-pwsub:500000:10\n";
  PasswdAccounts source(dir->Join("subuid"), dir->Join("subgid"), dir->Join("nsswitch.conf"));
  absl::StatusOr<std::vector<Account>> accounts = source.ListAgentAccounts();
  ASSERT_TRUE(accounts.ok()) << accounts.status();
  auto it = std::find_if(accounts->begin(), accounts->end(),
                         [](const Account& a) { return a.name == "leash-pwsub"; });
  ASSERT_NE(it, accounts->end());
  EXPECT_THAT(it->subordinate_uids,
              ::testing::ElementsAre(engine::UidRange{500000, 500009}, engine::UidRange{600000, 600004}));
  EXPECT_THAT(it->subordinate_gids, ::testing::ElementsAre(engine::UidRange{500000, 500009}));
  // A line newuidmap ignores is said, and denies nothing.
  EXPECT_THAT(it->subordinate_problems, ::testing::IsEmpty());
  EXPECT_THAT(it->subordinate_notes, ::testing::ElementsAre(::testing::HasSubstr("line 3")));
  // Lookup (the configured user's way in) reads them too.
  absl::StatusOr<std::optional<Account>> looked_up = source.Lookup("leash-pwsub");
  ASSERT_TRUE(looked_up.ok() && looked_up->has_value());
  EXPECT_EQ((*looked_up)->subordinate_uids, it->subordinate_uids);
  // Whom a range would let a subject act as: any account, by its UID.
  const uint32_t other_uid = (*bystander)->uid();
  absl::StatusOr<std::vector<Account>> inside = source.AccountsWithUidIn({{other_uid, other_uid}});
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_THAT(*inside, ::testing::ElementsAre(IsAccount("pwsub-other", other_uid, (*bystander)->gid())));
  // Whose group a GID range would let it act as: any group, by its GID.
  const uint32_t other_gid = (*bystander)->gid();
  absl::StatusOr<std::vector<Group>> groups = source.GroupsWithGidIn({{other_gid, other_gid}});
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ(groups->front().name, "pwsub-other");
  EXPECT_EQ(groups->front().gid, other_gid);
  // Ranges an NSS module serves are not in the files: every account is then not known.
  std::ofstream(dir->Join("nsswitch.conf")) << "passwd: files\nsubid: sss\n";
  absl::StatusOr<std::vector<Account>> with_nss = source.ListAgentAccounts();
  ASSERT_TRUE(with_nss.ok()) << with_nss.status();
  for (const Account& a : *with_nss) {
    EXPECT_THAT(a.subordinate_problems, ::testing::Contains(::testing::HasSubstr("'sss'"))) << a.name;
  }
}

TEST(PasswdAccounts, LookupFindsAnAccountAndReportsAbsence) {
  PasswdAccounts source;
  absl::StatusOr<std::optional<Account>> root = source.Lookup("root");
  ASSERT_TRUE(root.ok());
  ASSERT_TRUE(root->has_value());
  EXPECT_EQ((*root)->uid, 0u);
  absl::StatusOr<std::optional<Account>> none = source.Lookup("leash-no-such-account");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace leash::controlplane
