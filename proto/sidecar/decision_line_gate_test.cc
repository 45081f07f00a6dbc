// DecisionLineGate and the log that applies it: logging.level means what it says, one subject's
// flood of allow lines is held back (counted and reported) while its blocks and criticals are
// all written, and no other subject's lines are affected.
#include "proto/sidecar/decision_line_gate.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/sidecar/decision_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::sidecar {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSecond = 1'000'000'000;

TEST(LogLevelTest, EachLevelNameMapsToWhatItWrites) {
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kEveryDecision);
  EXPECT_EQ(ParseLogLevel("info"), LogLevel::kEveryDecision);
  EXPECT_EQ(ParseLogLevel("warning"), LogLevel::kBlocksAndCriticals);
  EXPECT_EQ(ParseLogLevel("error"), LogLevel::kCriticalsOnly);
  EXPECT_EQ(ParseLogLevel("critical"), LogLevel::kCriticalsOnly);
  EXPECT_EQ(ParseLogLevel("verbose"), absl::nullopt);
}

TEST(DecisionLineGateTest, TheLevelDecidesWhichKindsOfLineAreWritten) {
  struct Case {
    LogLevel level;
    bool allow, block, critical;
  };
  const std::vector<Case> cases = {
      {LogLevel::kEveryDecision, true, true, true},
      {LogLevel::kBlocksAndCriticals, false, true, true},
      {LogLevel::kCriticalsOnly, false, false, true},
  };
  for (const Case& c : cases) {
    DecisionLineGate gate({});
    gate.SetLevel(1001, c.level);
    EXPECT_EQ(gate.Admit(1001, LineKind::kAllow, kSecond), c.allow);
    EXPECT_EQ(gate.Admit(1001, LineKind::kBlock, kSecond), c.block);
    EXPECT_EQ(gate.Admit(1001, LineKind::kCritical, kSecond), c.critical);
    // Another subject keeps the default: every decision.
    EXPECT_TRUE(gate.Admit(1002, LineKind::kAllow, kSecond));
  }
}

TEST(DecisionLineGateTest, AWarningLevelHoldsBackNoCountOfAllowLines) {
  // Lines a level excludes are not "suppressed": nothing is reported for them.
  DecisionLineGate gate({});
  gate.SetLevel(1001, LogLevel::kBlocksAndCriticals);
  EXPECT_FALSE(gate.Admit(1001, LineKind::kAllow, kSecond));
  int reports = 0;
  gate.TakeSuppressed([&](const DecisionLineGate::Suppressed&) { ++reports; });
  EXPECT_EQ(reports, 0);
}

TEST(DecisionLineGateTest, AllowLinesPastTheBurstAreHeldBackPerSubjectBlocksNever) {
  DecisionLineGate gate({/*allow_lines_per_second=*/10, /*allow_burst=*/5});
  const int64_t t0 = 100 * kSecond;
  int written = 0;
  for (int i = 0; i < 1000; ++i) written += gate.Admit(1001, LineKind::kAllow, t0);
  EXPECT_EQ(written, 5);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(gate.Admit(1001, LineKind::kBlock, t0));
    ASSERT_TRUE(gate.Admit(1001, LineKind::kCritical, t0));
  }
  // Another subject's allow lines are its own budget.
  EXPECT_TRUE(gate.Admit(1002, LineKind::kAllow, t0));
  // 0.3 s later the subject has earned 3 lines (10 a second).
  const int64_t t1 = t0 + 3 * kSecond / 10;
  int later = 0;
  for (int i = 0; i < 100; ++i) later += gate.Admit(1001, LineKind::kAllow, t1);
  EXPECT_EQ(later, 3);

  std::vector<DecisionLineGate::Suppressed> held;
  gate.TakeSuppressed([&](const DecisionLineGate::Suppressed& s) { held.push_back(s); });
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].uid, 1001u);
  EXPECT_EQ(held[0].lines, static_cast<uint64_t>(1000 - written + 100 - later));
  EXPECT_EQ(held[0].first_ns, t0);
  EXPECT_EQ(held[0].last_ns, t1);
  // Taken: nothing more to report until more is held back.
  held.clear();
  gate.TakeSuppressed([&](const DecisionLineGate::Suppressed& s) { held.push_back(s); });
  EXPECT_TRUE(held.empty());
}

TEST(DecisionLineGateTest, RootsLinesAreLimitedUnderTheirOwnKey) {
  // uid 0 is a key like any other (slots are keyed uid + 1).
  DecisionLineGate gate({1, 1});
  int written = 0;
  for (int i = 0; i < 10; ++i) written += gate.Admit(0, LineKind::kAllow, kSecond);
  EXPECT_EQ(written, 1);
  EXPECT_TRUE(gate.Admit(1, LineKind::kAllow, kSecond));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

leash::v1::DecisionRecord Record(uint32_t uid, const std::string& action, int n) {
  leash::v1::DecisionRecord record;
  record.set_ref(absl::StrCat("r", n));
  record.set_uid(uid);
  record.set_surface("network");
  record.set_action(action);
  record.set_reason("test");
  return record;
}

TEST(DecisionLogGateTest, AFloodOfAllowLinesIsLimitedItsBlocksAllAppearAndTheCountIsReported) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/flood.jsonl");
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  constexpr int kAllows = 20000, kBlocks = (kAllows + 6) / 7;
  {
    AsyncDecisionLog log(fd, 8192, {/*allow_lines_per_second=*/50, /*allow_burst=*/100});
    for (int i = 0; i < kAllows; ++i) {
      log.Record(Record(2001, "allow", i));
      if (i % 7 == 0) log.Record(Record(2001, "block", i));
      if (i % 1000 == 0) log.Record(Record(2002, "allow", i));  // a quiet neighbour
      if (i % 1000 == 0) log.Flush();  // the ring never overflows: only the gate holds back
    }
  }
  int allows = 0, blocks = 0, neighbour = 0;
  uint64_t reported = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "\"uid\":2002")) ++neighbour;
    if (!absl::StrContains(line, "\"uid\":2001")) continue;
    if (absl::StrContains(line, "\"action\":\"allow\"")) ++allows;
    if (absl::StrContains(line, "\"action\":\"block\"")) ++blocks;
    if (absl::StrContains(line, "\"action\":\"suppressed\"")) {
      const size_t at = line.find("decision log: ");
      ASSERT_NE(at, absl::string_view::npos) << line;
      absl::string_view rest = line.substr(at + 14);
      uint64_t n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &n)) << line;
      reported += n;
      EXPECT_THAT(std::string(line), HasSubstr("allow lines of uid 2001 not written between"));
    }
  }
  EXPECT_EQ(blocks, kBlocks);
  EXPECT_EQ(neighbour, kAllows / 1000);
  EXPECT_LT(allows, kAllows / 10);
  EXPECT_GE(allows, 100);
  EXPECT_EQ(static_cast<uint64_t>(allows) + reported, static_cast<uint64_t>(kAllows));
}

TEST(DecisionLogGateTest, LoggingLevelWarningWritesNoAllowLines) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/warning.jsonl");
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  {
    AsyncDecisionLog log(fd);
    log.SetLevel(2001, LogLevel::kBlocksAndCriticals);
    log.Record(Record(2001, "allow", 1));
    log.Record(Record(2001, "block", 2));
    EXPECT_FALSE(log.Admits(2001, engine::Verdict::kAllow, false));
    EXPECT_TRUE(log.Admits(2001, engine::Verdict::kBlock, false));
    log.SetLevel(2001, LogLevel::kCriticalsOnly);
    log.Record(Record(2001, "block", 3));
    leash::v1::DecisionRecord critical = Record(2001, "block", 4);
    critical.set_severity("critical");
    log.Record(critical);
  }
  const std::string text = ReadFile(path);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("\"ref\":\"r1\"")));
  EXPECT_THAT(text, HasSubstr("\"ref\":\"r2\""));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("\"ref\":\"r3\"")));
  EXPECT_THAT(text, HasSubstr("\"ref\":\"r4\""));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("suppressed")));
}

}  // namespace
}  // namespace leash::sidecar
