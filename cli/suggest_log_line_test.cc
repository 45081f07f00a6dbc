#include "cli/suggest_log_line.h"

#include "cli/suggest_observations.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

constexpr char kAllow[] =
    R"({"ts":"2026-12-02T06:00:00.000001Z","ref":"k3x9q2mw","uid":2001,"surface":"network",)"
    R"("action":"allow","reason":"network: allowed","subject":{"domain":"API.GitHub.com",)"
    R"("ip":"192.0.2.7","port":443}})";

TEST(PeekUid, ReadsTheTopLevelUid) {
  EXPECT_EQ(PeekUid(kAllow), 2001u);
  EXPECT_EQ(PeekUid(R"({"ts":"x","ref":"r","surface":"tools"})"), 0u);  // proto3 leaves 0 out
  EXPECT_EQ(PeekUid(R"({"uid": 7 ,"ts":"x"})"), 7u);
  EXPECT_EQ(PeekUid(R"({"uid":"x"})"), std::nullopt);
  // A quoted key inside a string value is escaped, so it is never taken for the key.
  EXPECT_EQ(PeekUid(R"({"reason":"a \"uid\":9 b","uid":5})"), 5u);
}

TEST(PeekTs, ReadsTheTopLevelTimestamp) {
  EXPECT_EQ(PeekTs(kAllow), "2026-12-02T06:00:00.000001Z");
  EXPECT_EQ(PeekTs(R"({"ref":"r"})"), "");
}

TEST(ParseLoggedDecision, ReadsARecordAndIgnoresUnknownFields) {
  absl::StatusOr<LoggedDecision> got = ParseLoggedDecision(
      R"({"ref":"r","uid":3,"surface":"commands","action":"allow","new_field":[1,2],)"
      R"("subject":{"binary":"/usr/bin/git"}})");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->record.subject().binary(), "/usr/bin/git");
  EXPECT_TRUE(got->enforced);
}

TEST(ParseLoggedDecision, EnforcedFalseIsAWouldBeBlock) {
  absl::StatusOr<LoggedDecision> got = ParseLoggedDecision(
      R"({"ref":"r","uid":3,"surface":"tools","action":"block","enforced":false,)"
      R"("subject":{"name":"search","inputs":"{\"enforced\":true}"}})");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->enforced);
  got = ParseLoggedDecision(R"({"ref":"r","action":"block","enforced":true})");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->enforced);
}

TEST(ParseLoggedDecision, NotJsonIsInvalidArgument) {
  absl::StatusOr<LoggedDecision> got = ParseLoggedDecision(R"({"ref":"r","uid":)");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("not a decision record"), std::string::npos);
}

TEST(ExactNetworkEntry, NameWinsThenAddressAsAHostNetwork) {
  leash::v1::Subject subject;
  subject.set_domain("API.GitHub.com.");
  subject.set_ip("192.0.2.7");
  subject.set_port(443);
  EXPECT_EQ(ExactNetworkEntry(subject), "api.github.com:443");
  subject.set_domain("192.0.2.9");  // an HTTP Host that is an address
  EXPECT_EQ(ExactNetworkEntry(subject), "192.0.2.9/32:443");
  subject.clear_domain();
  EXPECT_EQ(ExactNetworkEntry(subject), "192.0.2.7/32:443");
  subject.set_ip("2001:db8::1");
  EXPECT_EQ(ExactNetworkEntry(subject), "[2001:db8::1/128]:443");
  subject.set_port(0);
  EXPECT_EQ(ExactNetworkEntry(subject), "2001:db8::1/128");
}

}  // namespace
}  // namespace leash::cli
