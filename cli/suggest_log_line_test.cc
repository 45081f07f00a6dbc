#include "cli/suggest_log_line.h"

#include "absl/time/time.h"
#include "cli/suggest_observations.h"
#include "engine/decision_record.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
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

// Every line the writers render reads back as the record it was, whichever reader takes it
// (the plain lines' own reader, or protobuf's for the rest).
TEST(ParseLoggedDecision, ReadsBackWhatTheWritersRender) {
  std::vector<leash::v1::DecisionRecord> records;
  engine::Decision allow;
  allow.verdict = engine::Verdict::kAllow;
  allow.reason = "network: api.github.com:443 matches allow entry 'github.com'";
  leash::v1::Subject net;
  net.set_domain("api.github.com");
  net.set_ip("192.0.2.7");
  net.set_port(443);
  records.push_back(engine::MakeDecisionRecord(absl::UnixEpoch(), "k3x9q2mw", 2001,
                                               leash::v1::SURFACE_NETWORK, allow, net));
  engine::Decision block;
  block.reason = "filesystem: '/home/x/a \"b\"' is not on the allow list";
  leash::v1::Subject file;
  file.set_path("/home/x/a \"b\"\xff");  // quotes and a byte that is not UTF-8
  records.push_back(engine::MakeDecisionRecord(absl::UnixEpoch(), "abcdefgh", 0,
                                               leash::v1::SURFACE_FILESYSTEM, block, file));
  leash::v1::Subject tool;
  tool.set_name("shell");
  tool.set_inputs("{\"cmd\":\"ls\"}");
  leash::v1::DecisionRecord with_findings = engine::MakeDecisionRecord(
      absl::UnixEpoch(), "toolref2", 7, leash::v1::SURFACE_TOOLS, block, tool);
  with_findings.add_findings()->set_category("secrets");
  with_findings.set_severity("critical");
  records.push_back(with_findings);
  for (const leash::v1::DecisionRecord& record : records) {
    std::string fast;
    engine::AppendDecisionLine(record, fast);
    for (std::string line : {fast, engine::DecisionLine(record)}) {
      line.pop_back();  // the '\n'
      absl::StatusOr<LoggedDecision> got = ParseLoggedDecision(line);
      ASSERT_TRUE(got.ok()) << line << ": " << got.status();
      leash::v1::DecisionRecord want;
      ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &want).ok()) << line;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got->record, want))
          << line << "\n" << got->record.DebugString();
      EXPECT_TRUE(got->enforced);
    }
  }
}

TEST(ParseLoggedDecision, PlainLinesWithOtherKeysOrShapesGoToProtobuf) {
  // enforced on a plain line; a key the plain reader does not know; a number it does not take.
  absl::StatusOr<LoggedDecision> got = ParseLoggedDecision(
      R"({"ts":"t","ref":"r","uid":3,"surface":"network","action":"block","enforced":false})");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->enforced);
  got = ParseLoggedDecision(R"({"ref":"r","uid":3,"later":{"x":1},"action":"allow"})");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->record.action(), "allow");
  got = ParseLoggedDecision(R"({"ref":"r", "uid": 3})");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->record.uid(), 3u);
  EXPECT_FALSE(ParseLoggedDecision(R"({"ref":"r","uid":3)").ok());
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
