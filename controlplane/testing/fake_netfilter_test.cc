// The fake keeps the real Netfilter's contract, so tests written against it mean the same
// thing against the kernel.
#include "controlplane/testing/fake_netfilter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

engine::IpAddress Addr(absl::string_view text) { return *engine::ParseIpAddress(text); }

TEST(FakeNetfilter, LogsEveryCallWithArgumentsInOrder) {
  FakeNetfilter fake;
  ASSERT_TRUE(fake.Prepare().ok());
  ASSERT_TRUE(fake.Apply(MakeSubject(1001, 18001, false, {Addr("10.0.0.53")})).ok());
  ASSERT_TRUE(fake.ApplyAll({MakeSubject(1002, 18002, true), MakeSubject(1003, 18003)}).ok());
  ASSERT_TRUE(fake.Release(1002).ok());
  ASSERT_TRUE(fake.ListSubjects().ok());
  EXPECT_THAT(fake.CallStrings(),
              ElementsAre("Prepare()", "Apply(uid=1001 port=18001 udp=drop dns=[10.0.0.53])",
                          "ApplyAll(uid=1002 port=18002 udp=allow dns=[]; "
                          "uid=1003 port=18003 udp=drop dns=[])",
                          "Release(1002)", "ListSubjects()"));
  ASSERT_EQ(fake.CallsOf(FakeNetfilter::Call::Kind::kApply).size(), 1u);
  EXPECT_EQ(fake.CallsOf(FakeNetfilter::Call::Kind::kApply)[0].subjects[0].uid, 1001u);
  fake.ClearCalls();
  EXPECT_THAT(fake.calls(), IsEmpty());
}

TEST(FakeNetfilter, KeepsKernelStateByUid) {
  FakeNetfilter fake;
  ASSERT_TRUE(fake.Prepare().ok());
  ASSERT_TRUE(fake.Apply(MakeSubject(1001, 18001)).ok());
  ASSERT_TRUE(fake.Apply(MakeSubject(1002, 18002)).ok());
  ASSERT_TRUE(fake.Apply(MakeSubject(1001, 18005)).ok());  // a replace
  EXPECT_EQ(fake.subjects().at(1001).port, 18005);
  ASSERT_TRUE(fake.Release(1002).ok());
  EXPECT_THAT(*fake.ListSubjects(), ElementsAre(1001u));
}

TEST(FakeNetfilter, ApplyBeforePrepareIsFailedPrecondition) {
  FakeNetfilter fake;
  absl::Status s = fake.Apply(MakeSubject(1001, 18001));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Prepare()"));
  fake.Seed(MakeSubject(1002, 18002));  // tables left by a previous run
  EXPECT_TRUE(fake.prepared());
  EXPECT_TRUE(fake.Apply(MakeSubject(1001, 18001)).ok());
}

TEST(FakeNetfilter, InvalidSubjectsAreRefusedLikeTheRealOne) {
  FakeNetfilter fake;
  ASSERT_TRUE(fake.Prepare().ok());
  EXPECT_EQ(fake.Apply(MakeSubject(0, 18001)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake.Apply(MakeSubject(1001, 8443)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake.ApplyAll({MakeSubject(1001, 18001), MakeSubject(1001, 18002)}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(fake.subjects().empty());
}

TEST(FakeNetfilter, InjectedApplyFailureIsPerUidAndApplyAllIsAllOrNothing) {
  FakeNetfilter fake;
  ASSERT_TRUE(fake.Prepare().ok());
  fake.FailApply(1002, absl::UnavailableError("netlink down"));
  EXPECT_TRUE(fake.Apply(MakeSubject(1001, 18001)).ok());
  EXPECT_EQ(fake.Apply(MakeSubject(1002, 18002)).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake.ApplyAll({MakeSubject(1003, 18003), MakeSubject(1002, 18002)}).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_THAT(*fake.ListSubjects(), ElementsAre(1001u));  // 1003 not applied either
  fake.ClearFailures();
  EXPECT_TRUE(fake.Apply(MakeSubject(1002, 18002)).ok());
}

TEST(FakeNetfilter, FailureWithACountWearsOff) {
  FakeNetfilter fake;
  fake.FailPrepare(absl::InternalError("once"), 1);
  EXPECT_EQ(fake.Prepare().status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(fake.Prepare().ok());
  fake.FailRelease(1001, absl::InternalError("twice"), 2);
  EXPECT_FALSE(fake.Release(1001).ok());
  EXPECT_FALSE(fake.Release(1001).ok());
  EXPECT_TRUE(fake.Release(1001).ok());  // absent UID: not an error
  fake.FailListSubjects(absl::UnavailableError("down"));
  EXPECT_EQ(fake.ListSubjects().status().code(), absl::StatusCode::kUnavailable);
}

TEST(FakeNetfilter, PrepareReturnsSimulatedMigrationLinesOnce) {
  FakeNetfilter fake;
  fake.SetPrepareLines({"leash: dropped table ip leash left in the old shape"});
  EXPECT_THAT(*fake.Prepare(), ElementsAre(HasSubstr("old shape")));
  EXPECT_THAT(*fake.Prepare(), IsEmpty());
}

}  // namespace
}  // namespace leash::controlplane::testing
