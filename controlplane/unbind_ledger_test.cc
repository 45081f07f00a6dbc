// The unbind ledger's line format and its reader: every record back exactly, every other line
// reported, a torn last line detected.
#include "controlplane/unbind_ledger.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

UnbindRecord Record() {
  return UnbindRecord{absl::FromUnixNanos(1795000000123456789), "uid 0 (root)",
                      "agent:leash-iris", "web-research",
                      {"fail_closed:web-research", "network.allow:it's \"x\"\n"}};
}

TEST(UnbindLedger, RecordIsOneLineAndRoundTrips) {
  const std::string line = FormatUnbindRecord(Record());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_THAT(line, HasSubstr("\"time\":\"2026-11-18T11:06:40.123456789Z\""));
  absl::StatusOr<UnbindRecord> back = ParseUnbindRecord(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Record());
}

TEST(UnbindLedger, RefusesAnythingThatIsNotExactlyARecord) {
  EXPECT_THAT(ParseUnbindRecord("not json").status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseUnbindRecord("{\"time\":\"2026-01-01T00:00:00Z\",\"who\":\"r\",\"scope\":"
                                "\"global\",\"profile\":\"p\",\"acks\":[],\"extra\":1}")
                  .status()
                  .message(),
              HasSubstr("unknown key \"extra\""));
  EXPECT_THAT(ParseUnbindRecord("{\"time\":\"yesterday\",\"who\":\"r\",\"scope\":\"global\","
                                "\"profile\":\"p\",\"acks\":[]}")
                  .status()
                  .message(),
              HasSubstr("RFC 3339"));
  EXPECT_THAT(ParseUnbindRecord("{\"time\":\"2026-01-01T00:00:00Z\",\"who\":\"r\",\"scope\":"
                                "\"global\",\"profile\":\"p\",\"acks\":[1]}")
                  .status()
                  .message(),
              HasSubstr("not a string"));
  EXPECT_THAT(ParseUnbindRecord("{\"time\":\"2026-01-01T00:00:00Z\",\"scope\":\"global\","
                                "\"profile\":\"p\",\"acks\":[]}")
                  .status()
                  .message(),
              HasSubstr("no \"who\""));
}

// The ledger records every write's consent, each line naming its kind; a line written before
// other writes recorded here has no "kind" and is an unbind.
TEST(ConsentLedger, EachRecordNamesItsWriteAndAnOldLineIsAnUnbind) {
  UnbindRecord rebind = Record();
  rebind.kind = std::string(kLedgerBind);
  rebind.acks = {"unset.deny:commands:python3"};
  const std::string line = FormatUnbindRecord(rebind);
  EXPECT_THAT(line, HasSubstr("\"kind\":\"bind\""));
  absl::StatusOr<UnbindRecord> back = ParseUnbindRecord(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, rebind);

  absl::StatusOr<UnbindRecord> old = ParseUnbindRecord(
      "{\"time\":\"2026-01-01T00:00:00Z\",\"who\":\"r\",\"scope\":\"global\","
      "\"profile\":\"p\",\"acks\":[]}");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->kind, "unbind");
  EXPECT_THAT(ParseUnbindRecord("{\"time\":\"2026-01-01T00:00:00Z\",\"who\":\"r\",\"kind\":"
                                "\"rename\",\"scope\":\"global\",\"profile\":\"p\",\"acks\":[]}")
                  .status()
                  .message(),
              HasSubstr("unknown \"kind\" \"rename\""));
}

TEST(UnbindLedger, TornLastLineIsDetectedNotDropped) {
  const std::string good = FormatUnbindRecord(Record());
  LedgerContents contents = ParseLedger(good + good.substr(0, 20));
  EXPECT_EQ(contents.records.size(), 1u);
  EXPECT_TRUE(contents.torn_tail);
  ASSERT_EQ(contents.problems.size(), 1u);
  EXPECT_TRUE(contents.problems[0].torn);
  EXPECT_EQ(contents.problems[0].line, 2u);
  EXPECT_EQ(contents.problems[0].offset, good.size());
  EXPECT_THAT(contents.problems[0].reason, HasSubstr("torn last line"));
}

TEST(UnbindLedger, EveryLineThatIsNotARecordIsReported) {
  const std::string good = FormatUnbindRecord(Record());
  LedgerContents contents = ParseLedger(good + "\n" + "garbage\n" + good);
  EXPECT_EQ(contents.records.size(), 2u);
  EXPECT_FALSE(contents.torn_tail);
  ASSERT_EQ(contents.problems.size(), 2u);
  EXPECT_EQ(contents.problems[0].reason, "empty line");
  EXPECT_EQ(contents.problems[1].line, 3u);
}

TEST(UnbindLedger, EmptyLedgerHasNothing) {
  LedgerContents contents = ParseLedger("");
  EXPECT_TRUE(contents.records.empty());
  EXPECT_TRUE(contents.problems.empty());
}

}  // namespace
}  // namespace leash::controlplane
