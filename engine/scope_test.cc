// Scopes: global | agent:<account>; team: and display names refused, naming the real account.
#include "engine/scope.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kAccounts = {"leash-darth-vader", "leash-iris", "leash-iris-2",
                                            "leash-irisa", "leash-ops"};

TEST(Scope, GlobalAndAgentParse) {
  ASSERT_TRUE(ParseScope("global").ok());
  EXPECT_TRUE(ParseScope("global")->is_global());
  absl::StatusOr<Scope> agent = ParseScope("agent:leash-iris");
  ASSERT_TRUE(agent.ok());
  EXPECT_EQ(agent->account, "leash-iris");
  EXPECT_EQ(agent->ToString(), "agent:leash-iris");
}

TEST(Scope, TeamScopeRefusedWithTheReason) {
  absl::StatusOr<Scope> team = ParseScope("team:red");
  EXPECT_EQ(team.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(team.status().message(), HasSubstr("team is not a policy tier (removed 2026-10-14)"));
  EXPECT_THAT(team.status().message(), HasSubstr("binds one profile to each of its agents"));
  ScopeCheck check = CheckScopeForWrite("team:red", kAccounts, "fido");
  EXPECT_THAT(check.status.message(), HasSubstr("not a policy tier"));
}

TEST(Scope, UnknownKindRefused) {
  EXPECT_THAT(ParseScope("user:fido").status().message(),
              HasSubstr("neither global nor agent:<account>"));
  EXPECT_THAT(ParseScope("agent:").status().message(), HasSubstr("names no account"));
}

TEST(Scope, FoldsDisplayNamesLikeTheSlug) {
  EXPECT_EQ(FoldDisplayName("Iris"), "iris");
  EXPECT_EQ(FoldDisplayName("Darth  Vader!"), "darth-vader");
  EXPECT_EQ(FoldDisplayName("--R2 D2--"), "r2-d2");
}

TEST(Scope, DisplayNameMatchesSlugAndCollisionSuffixes) {
  EXPECT_THAT(AccountsForDisplayName("Iris", kAccounts), ElementsAre("leash-iris", "leash-iris-2"));
  EXPECT_THAT(AccountsForDisplayName("Darth Vader", kAccounts), ElementsAre("leash-darth-vader"));
  EXPECT_TRUE(AccountsForDisplayName("Nobody", kAccounts).empty());
}

TEST(Scope, DisplayNameRefusedNamingTheRealAccount) {
  const std::vector<std::string> accounts = {"leash-iris", "leash-ops"};
  ScopeCheck check = CheckScopeForWrite("agent:Iris", accounts, "fido");
  EXPECT_EQ(check.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(check.status.message(), HasSubstr("'Iris' is not a Linux account name"));
  EXPECT_THAT(check.status.message(), HasSubstr("the account for 'Iris' is leash-iris: write "
                                                "agent:leash-iris"));
  EXPECT_THAT(check.candidates, ElementsAre("leash-iris"));
}

TEST(Scope, DisplayNameWithCollisionsListsEveryMatchingAccount) {
  ScopeCheck check = CheckScopeForWrite("agent:Iris", kAccounts, "fido");
  EXPECT_THAT(check.status.message(),
              HasSubstr("accounts that match 'Iris': leash-iris, leash-iris-2"));
}

TEST(Scope, LowercaseDisplayNameThatIsNotAnAccountIsRefused) {
  // "iris" has an account name's shape but is not a discovered agent account.
  ScopeCheck check = CheckScopeForWrite("agent:iris", {"leash-iris"}, "fido");
  EXPECT_THAT(check.status.message(), HasSubstr("is not an agent account"));
  EXPECT_THAT(check.status.message(), HasSubstr("resolve for nobody"));
  EXPECT_THAT(check.status.message(), HasSubstr("write agent:leash-iris"));
}

TEST(Scope, AgentAccountNotInPasswdIsRefused) {
  ScopeCheck check = CheckScopeForWrite("agent:leash-iris", {"leash-iris-2"}, "fido");
  EXPECT_THAT(check.status.message(), HasSubstr("no agent account 'leash-iris' in passwd"));
  EXPECT_THAT(check.candidates, ElementsAre("leash-iris-2"));
}

TEST(Scope, ConfiguredUserHasNoTierOfItsOwn) {
  ScopeCheck check = CheckScopeForWrite("agent:fido", {"fido", "leash-iris"}, "fido");
  EXPECT_THAT(check.status.message(), HasSubstr("configured user"));
  EXPECT_THAT(check.status.message(), HasSubstr("re-point the control plane's own confinement"));
}

TEST(Scope, DiscoveredAgentAndGlobalAreAccepted) {
  ScopeCheck agent = CheckScopeForWrite("agent:leash-iris-2", kAccounts, "fido");
  ASSERT_TRUE(agent.status.ok()) << agent.status;
  EXPECT_EQ(agent.scope.account, "leash-iris-2");
  EXPECT_TRUE(CheckScopeForWrite("global", {}, "fido").status.ok());
}

}  // namespace
}  // namespace leash::engine
