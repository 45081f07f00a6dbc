// TeardownSubjects over the fake: every UID is released even when some fail, and the error
// names each failure. The factory's choice of backend is exercised for real by
// //test/network:iptables_fallback_test.
#include "controlplane/netfilter_factory.h"

#include "controlplane/testing/fake_netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::FakeNetfilter;
using ::leash::controlplane::testing::MakeSubject;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(TeardownSubjects, ReleasesEveryGivenUid) {
  FakeNetfilter fake;
  fake.Seed(MakeSubject(1001, 18001));
  fake.Seed(MakeSubject(1002, 18002));
  fake.Seed(MakeSubject(1003, 18003));
  // 1004 is in the port map but has no chains: not an error.
  ASSERT_TRUE(TeardownSubjects(fake, {1001, 1002, 1004}).ok());
  EXPECT_THAT(fake.CallStrings(), ElementsAre("Release(1001)", "Release(1002)", "Release(1004)"));
  EXPECT_THAT(*fake.ListSubjects(), ElementsAre(1003u));  // not given: left alone
}

TEST(TeardownSubjects, CarriesOnPastAFailureAndNamesEveryFailedUid) {
  FakeNetfilter fake;
  fake.Seed(MakeSubject(1001, 18001));
  fake.Seed(MakeSubject(1002, 18002));
  fake.Seed(MakeSubject(1003, 18003));
  fake.FailRelease(1001, absl::UnavailableError("netlink: connection refused"));
  fake.FailRelease(1003, absl::InternalError("boom"));
  absl::Status s = TeardownSubjects(fake, {1001, 1002, 1003});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("2 of 3"));
  EXPECT_THAT(s.message(), HasSubstr("UID 1001: netlink: connection refused"));
  EXPECT_THAT(s.message(), HasSubstr("UID 1003: boom"));
  EXPECT_THAT(*fake.ListSubjects(), ElementsAre(1001u, 1003u));  // 1002 was still released
}

TEST(TeardownSubjects, NoUidsIsNothingToDo) {
  FakeNetfilter fake;
  ASSERT_TRUE(TeardownSubjects(fake, {}).ok());
  EXPECT_THAT(fake.calls(), IsEmpty());
}

}  // namespace
}  // namespace leash::controlplane
