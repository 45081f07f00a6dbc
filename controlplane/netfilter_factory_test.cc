// TeardownSubjects over the fake: every UID is released even when some fail, and the error
// names each failure. CheckEnforcesEverySubject: the fallback refuses a host with agents. The factory's choice of backend is exercised for real by
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

NetfilterChoice Choice(bool fallback) {
  NetfilterChoice choice;
  choice.netfilter = std::make_unique<FakeNetfilter>();
  choice.single_uid_fallback = fallback;
  if (fallback) choice.fallback_reason = "nftables is unavailable (netlink: Operation not permitted)";
  return choice;
}

TEST(CheckEnforcesEverySubject, TheFallbackWithAgentsRefusesNamingNftablesAndEveryAgent) {
  absl::Status s =
      CheckEnforcesEverySubject(Choice(true), "fido", {"leash-iris", "leash-vader"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("enforcing several UIDs needs nftables"));
  EXPECT_THAT(s.message(), HasSubstr("nftables is unavailable (netlink: Operation not permitted)"));
  EXPECT_THAT(s.message(), HasSubstr("2 agent account(s) (leash-iris, leash-vader)"));
  EXPECT_THAT(s.message(), HasSubstr("besides the configured user fido"));
  EXPECT_THAT(s.message(), HasSubstr("modprobe nf_tables"));
  // One agent is already a second UID beside the configured user.
  EXPECT_EQ(CheckEnforcesEverySubject(Choice(true), "fido", {"leash-iris"}).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CheckEnforcesEverySubject, TheFallbackOnASingleSubjectHostAndNftablesAlwaysProceed) {
  EXPECT_TRUE(CheckEnforcesEverySubject(Choice(true), "fido", {}).ok());
  EXPECT_TRUE(CheckEnforcesEverySubject(Choice(false), "fido", {"leash-a", "leash-b"}).ok());
}

}  // namespace
}  // namespace leash::controlplane
