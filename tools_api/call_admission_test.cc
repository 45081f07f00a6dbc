#include "tools_api/call_admission.h"

#include "gtest/gtest.h"

namespace leash::tools {
namespace {

constexpr CallAdmission::Event kRefused = CallAdmission::Event::kRefused;
constexpr CallAdmission::Event kCut = CallAdmission::Event::kCut;
using Admission = CallAdmission::Admission;

bool Admitted(CallAdmission& admission, uint32_t uid) {
  return admission.Admit(uid) == Admission::kAdmitted;
}

TEST(CallAdmission, AnAccountGetsItsShareAndNoMore) {
  CallAdmission admission(2, absl::Seconds(10));
  EXPECT_TRUE(Admitted(admission, 1001));
  EXPECT_TRUE(Admitted(admission, 1001));
  EXPECT_FALSE(Admitted(admission, 1001));
  EXPECT_EQ(admission.InFlight(1001), 2);
  // Another account is not affected by the first one's calls.
  EXPECT_TRUE(Admitted(admission, 1002));
  admission.Release(1001);
  EXPECT_TRUE(Admitted(admission, 1001));
  EXPECT_FALSE(Admitted(admission, 1001));
}

TEST(CallAdmission, RootIsNeverLimited) {
  CallAdmission admission(1, absl::Seconds(10));
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(Admitted(admission, 0));
  EXPECT_EQ(admission.InFlight(0), 100);
}

TEST(CallAdmission, AReleaseWithoutAnAdmissionChangesNothing) {
  CallAdmission admission(1, absl::Seconds(10));
  admission.Release(1001);
  EXPECT_EQ(admission.InFlight(1001), 0);
  EXPECT_TRUE(Admitted(admission, 1001));
  EXPECT_FALSE(Admitted(admission, 1001));
}

// An account that holds its share and keeps opening calls is refused max_alive() times, then
// told to be cut; one admitted call starts the count again, and another account keeps its own.
TEST(CallAdmission, MoreRefusalsInARowThanTheAliveCapSaysCut) {
  CallAdmission admission(1, absl::Seconds(10));
  ASSERT_TRUE(Admitted(admission, 1001));
  for (int i = 0; i < admission.max_alive(); ++i) {
    ASSERT_EQ(admission.Admit(1001), Admission::kOverShare) << i;
  }
  EXPECT_EQ(admission.Admit(1001), Admission::kOverShareTooOften);
  EXPECT_EQ(admission.Admit(1001), Admission::kOverShareTooOften);
  ASSERT_TRUE(Admitted(admission, 1002));
  EXPECT_EQ(admission.Admit(1002), Admission::kOverShare) << "another account counts its own";
  admission.Release(1001);
  ASSERT_TRUE(Admitted(admission, 1001));
  EXPECT_EQ(admission.Admit(1001), Admission::kOverShare) << "an admitted call starts again";
  for (int i = 0; i < 2 * admission.max_alive(); ++i) {
    EXPECT_TRUE(Admitted(admission, 0)) << "root is never refused";
  }
}

TEST(CallAdmission, MoreCallsAliveThanFourSharesAndTheSlackSaysCut) {
  CallAdmission admission(2, absl::Seconds(10));
  ASSERT_EQ(admission.max_alive(), 4 * 2 + kLiveCallsSlack);
  for (int i = 0; i < admission.max_alive(); ++i) EXPECT_TRUE(admission.Opened(1001)) << i;
  EXPECT_FALSE(admission.Opened(1001));
  EXPECT_FALSE(admission.Opened(1001));
  EXPECT_TRUE(admission.Opened(1002)) << "another account is not affected";
  EXPECT_EQ(admission.Alive(1001), admission.max_alive() + 2);
  for (int i = 0; i < admission.max_alive() + 2; ++i) admission.Closed(1001);
  EXPECT_EQ(admission.Alive(1001), 0);
  EXPECT_TRUE(admission.Opened(1001));
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(admission.Opened(0)) << "root is never cut";
}

TEST(CallAdmission, RefusalsAreReportedOncePerIntervalWithTheCountBetween) {
  CallAdmission admission(1, absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  uint64_t unreported = 99;
  EXPECT_TRUE(admission.ShouldReport(1001, kRefused, t0, unreported));
  EXPECT_EQ(unreported, 0u);
  EXPECT_FALSE(admission.ShouldReport(1001, kRefused, t0 + absl::Seconds(1), unreported));
  EXPECT_FALSE(admission.ShouldReport(1001, kRefused, t0 + absl::Seconds(9), unreported));
  // Another account has its own interval.
  EXPECT_TRUE(admission.ShouldReport(1002, kRefused, t0 + absl::Seconds(9), unreported));
  EXPECT_TRUE(admission.ShouldReport(1001, kRefused, t0 + absl::Seconds(10), unreported));
  EXPECT_EQ(unreported, 2u);
  // A cut is reported on its own clock: refusals do not hide it.
  EXPECT_TRUE(admission.ShouldReport(1001, kCut, t0 + absl::Seconds(11), unreported));
  EXPECT_EQ(unreported, 0u);
}

}  // namespace
}  // namespace leash::tools
