#include "engine/decision_record.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;

TEST(MakeRef, IsEightUnambiguousCharacters) {
  const std::string ref = MakeRef(0x123456789abcdefULL);
  EXPECT_EQ(ref.size(), 8u);
  EXPECT_EQ(ref.find_first_of("lo01"), std::string::npos);
  EXPECT_NE(MakeRef(1), MakeRef(2));
}

TEST(DecisionLine, IsOneJsonLineWithTheSpecFields) {
  Decision decision;
  decision.verdict = Verdict::kBlock;
  decision.reason = "network: evil.com:443 not in allow list (whitelist)";
  leash::v1::Subject subject;
  subject.set_domain("evil.com");
  subject.set_ip("192.0.2.9");
  subject.set_port(443);
  const std::string line = DecisionLine(MakeDecisionRecord(
      absl::FromUnixSeconds(1795988000), "abcdefgh", 1001, leash::v1::SURFACE_NETWORK, decision,
      subject));
  EXPECT_EQ(line,
            "{\"ts\":\"2026-11-29T21:33:20.000000Z\",\"ref\":\"abcdefgh\",\"uid\":1001,"
            "\"surface\":\"network\",\"action\":\"block\",\"reason\":\"network: evil.com:443 not "
            "in allow list (whitelist)\",\"subject\":{\"domain\":\"evil.com\",\"ip\":\"192.0.2.9\","
            "\"port\":443}}\n");
}

TEST(DecisionLine, EscapesControlCharactersSoALineStaysOneLine) {
  leash::v1::DecisionRecord record;
  record.set_reason("a\nb");
  record.mutable_subject()->set_path("/tmp/x\ny");
  const std::string line = DecisionLine(record);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_THAT(line, HasSubstr("a\\nb"));
}

}  // namespace
}  // namespace leash::engine
