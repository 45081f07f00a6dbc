#include "controlplane/subject_directory.h"

#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

SubjectState WithPolicy(const std::string& account, uint32_t uid, const std::string& fail_mode) {
  SubjectState state;
  state.account = Account(account, uid, uid);
  state.port = 18443;
  state.published.set_uid(uid);
  state.published.set_account(account);
  state.published.mutable_policy()->set_fail_mode(fail_mode);
  state.fingerprint = Fingerprint(state.published);
  return state;
}

SubjectState WithoutPolicy(const std::string& account, uint32_t uid, const std::string& fail_mode) {
  SubjectState state;
  state.account = Account(account, uid, uid);
  state.published.set_uid(uid);
  state.published.mutable_no_policy()->set_reason("left discovery");
  state.published.mutable_no_policy()->set_fail_mode(fail_mode);
  state.fingerprint = Fingerprint(state.published);
  state.problem = "left discovery";
  return state;
}

TEST(SubjectDirectory, AnAgentIsFoundByItsUidItsSubordinateUidsAndItsName) {
  SubjectState iris = WithPolicy("leash-iris", 1001, "closed");
  iris.subordinate_uids = {{100000, 165535}};
  SubjectDirectory directory;
  directory.Update({{1001, iris}, {1002, WithPolicy("leash-vader", 1002, "closed")}});

  ASSERT_TRUE(directory.ByUid(1001).has_value());
  EXPECT_EQ(directory.ByUid(1001)->state.account.name, "leash-iris");
  // A process of the agent inside a user namespace it mapped its range into.
  ASSERT_TRUE(directory.ByUid(100000).has_value());
  EXPECT_EQ(directory.ByUid(165535)->state.account.name, "leash-iris");
  EXPECT_FALSE(directory.ByUid(165536).has_value());
  EXPECT_FALSE(directory.ByUid(99999).has_value());
  EXPECT_FALSE(directory.ByUid(0).has_value());
  EXPECT_EQ(directory.ByAccount("leash-vader")->state.account.uid, 1002u);
  EXPECT_FALSE(directory.ByAccount("leash-nobody").has_value());
  EXPECT_EQ(directory.All().size(), 2u);
}

TEST(SubjectDirectory, TheConfiguredUserIsTheSubjectMarkedSo) {
  SubjectDirectory directory;
  EXPECT_FALSE(directory.ConfiguredUser().has_value());
  SubjectState user = WithPolicy("leash-iris", 1001, "closed");
  user.configured_user = true;
  directory.Update({{1001, user}, {1002, WithPolicy("leash-vader", 1002, "closed")}});
  ASSERT_TRUE(directory.ConfiguredUser().has_value());
  EXPECT_EQ(directory.ConfiguredUser()->state.account.name, "leash-iris");
}

// The policy lives once, compiled; the view carries everything else of the state.
TEST(SubjectDirectory, AViewCarriesItsCompiledPolicyAndNotThePublishedCopy) {
  SubjectState iris = WithPolicy("leash-iris", 1001, "open");
  iris.sources = {"profile coding"};
  SubjectDirectory directory;
  directory.Update({{1001, iris}});
  const std::optional<SubjectView> view = directory.ByUid(1001);
  ASSERT_TRUE(view.has_value());
  ASSERT_NE(view->policy, nullptr);
  EXPECT_EQ(view->policy->config().fail_mode(), "open");
  EXPECT_FALSE(view->state.published.has_policy());
  EXPECT_EQ(view->state.sources, iris.sources);
  EXPECT_EQ(view->state.port, 18443);
  EXPECT_EQ(view->state.fingerprint, iris.fingerprint);
}

TEST(SubjectDirectory, AnUnchangedSubjectKeepsItsCompiledPolicyAndAChangedOneIsRecompiled) {
  SubjectDirectory directory;
  directory.Update({{1001, WithPolicy("leash-iris", 1001, "closed")},
                    {1002, WithPolicy("leash-vader", 1002, "closed")}});
  const auto iris_before = directory.ByUid(1001)->policy;
  const auto vader_before = directory.ByUid(1002)->policy;
  directory.Update({{1001, WithPolicy("leash-iris", 1001, "closed")},
                    {1002, WithPolicy("leash-vader", 1002, "open")}});
  EXPECT_EQ(directory.ByUid(1001)->policy, iris_before);
  EXPECT_NE(directory.ByUid(1002)->policy, vader_before);
  EXPECT_EQ(directory.ByUid(1002)->policy->config().fail_mode(), "open");
}

// CheckTool judges a subject with no policy the way the sidecars were told to: by the floor's
// fail_mode as of the pass that published it ("open" open; anything else closed).
TEST(SubjectDirectory, ASubjectWithNoPolicyIsJudgedByTheFailModeItWasPublishedWith) {
  SubjectDirectory directory;
  directory.Update({{1001, WithoutPolicy("leash-iris", 1001, "open")},
                    {1002, WithoutPolicy("leash-vader", 1002, "closed")},
                    {1003, WithoutPolicy("leash-typo", 1003, "opne")}});
  EXPECT_EQ(directory.ByUid(1001)->policy, nullptr);
  EXPECT_EQ(directory.ByUid(1001)->no_policy_fail_mode, engine::FailMode::kOpen);
  EXPECT_EQ(directory.ByUid(1002)->no_policy_fail_mode, engine::FailMode::kClosed);
  EXPECT_EQ(directory.ByUid(1003)->no_policy_fail_mode, engine::FailMode::kClosed);
  EXPECT_EQ(directory.ByUid(1001)->state.problem, "left discovery");
}

// A subject that left, its name and its subordinate range answer nothing after the next update.
TEST(SubjectDirectory, ASubjectMissingFromAnUpdateIsGoneByUidRangeAndName) {
  SubjectState iris = WithPolicy("leash-iris", 1001, "closed");
  iris.subordinate_uids = {{100000, 165535}};
  iris.configured_user = true;
  SubjectDirectory directory;
  directory.Update({{1001, iris}, {1002, WithPolicy("leash-vader", 1002, "closed")}});
  directory.Update({{1002, WithPolicy("leash-vader", 1002, "closed")}});
  EXPECT_FALSE(directory.ByUid(1001).has_value());
  EXPECT_FALSE(directory.ByUid(100000).has_value());
  EXPECT_FALSE(directory.ByAccount("leash-iris").has_value());
  EXPECT_FALSE(directory.ConfiguredUser().has_value());
  EXPECT_TRUE(directory.ByUid(1002).has_value());
}

}  // namespace
}  // namespace leash::controlplane
