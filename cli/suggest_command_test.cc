#include "cli/suggest_command.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

const absl::Time kNow =
    absl::FromCivil(absl::CivilSecond(2026, 12, 2, 8, 0, 0), absl::UTCTimeZone());

TEST(ParseSuggestTime, ADurationIsBeforeNow) {
  EXPECT_EQ(*ParseSuggestTime("2h", kNow), kNow - absl::Hours(2));
  EXPECT_EQ(*ParseSuggestTime("1h30m", kNow), kNow - absl::Minutes(90));
}

TEST(ParseSuggestTime, AnRfc3339Time) {
  EXPECT_EQ(*ParseSuggestTime("2026-12-02T06:00:00Z", kNow),
            absl::FromCivil(absl::CivilSecond(2026, 12, 2, 6, 0, 0), absl::UTCTimeZone()));
  EXPECT_EQ(*ParseSuggestTime("2026-12-02T07:00:00+01:00", kNow),
            absl::FromCivil(absl::CivilSecond(2026, 12, 2, 6, 0, 0), absl::UTCTimeZone()));
}

TEST(ParseSuggestTime, AnythingElseSaysBothForms) {
  for (const char* text : {"yesterday", "-2h", "", "2026-12-02"}) {
    absl::StatusOr<absl::Time> got = ParseSuggestTime(text, kNow);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(got.status().message(), ::testing::HasSubstr("RFC 3339")) << text;
  }
}

}  // namespace
}  // namespace leash::cli
