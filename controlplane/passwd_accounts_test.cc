#include "controlplane/passwd_accounts.h"

#include <pwd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/test_account.h"

namespace leash::controlplane {
namespace {

TEST(PasswdAccounts, ListsOnlyLeashPrefixedAccountsWithTheirUids) {
  LEASH_REQUIRE_ROOT();
  auto agent = leash::testing::TestAccount::Create("leash-pwtest");
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto other = leash::testing::TestAccount::Create("pwtest-leash");
  ASSERT_TRUE(other.ok()) << other.status();
  PasswdAccounts source;
  absl::StatusOr<std::vector<Account>> accounts = source.ListAgentAccounts();
  ASSERT_TRUE(accounts.ok()) << accounts.status();
  const Account expected{"leash-pwtest", (*agent)->uid(), (*agent)->gid()};
  EXPECT_THAT(*accounts, ::testing::Contains(expected));
  for (const Account& a : *accounts) {
    EXPECT_EQ(a.name.rfind("leash-", 0), 0u) << a.name;
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
