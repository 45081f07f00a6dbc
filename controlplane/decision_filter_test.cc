// DecisionFilter: each field narrows, an audited would-be block is told apart by `enforced`,
// and a request that does not read is refused naming its field.
#include "controlplane/decision_filter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

StreamedDecision Decision(const std::string& line, const std::string& account) {
  StreamedDecision d;
  d.line = line;
  d.record = *ParseDecisionLine(line);
  d.account = account;
  return d;
}

const char kBlock[] =
    R"({"ts":"2026-12-02T10:00:00.000001Z","ref":"aaaa1111","uid":1001,"surface":"network",)"
    R"("action":"block","reason":"not in network.allow","subject":{"domain":"evil.example","port":443}})";
const char kAuditBlock[] =
    R"({"ts":"2026-12-02T10:00:01Z","ref":"bbbb2222","uid":1001,"surface":"filesystem",)"
    R"("action":"block","reason":"not in filesystem.allow","subject":{"path":"/etc/x"},"enforced":false})";
const char kAllow[] =
    R"({"ts":"2026-12-02T10:00:02Z","ref":"cccc3333","uid":1002,"surface":"commands",)"
    R"("action":"allow","reason":"in commands.allow","subject":{"binary":"/usr/bin/git"},"future":1})";

TEST(DecisionFilterTest, EmptyMatchesEverything) {
  const DecisionFilter filter;
  EXPECT_TRUE(filter.Matches(Decision(kBlock, "leash-a")));
  EXPECT_TRUE(filter.Matches(Decision(kAllow, "")));
}

TEST(DecisionFilterTest, EachFieldNarrows) {
  struct Case {
    const char* name;
    leash::v1::WatchDecisionsRequest request;
    bool block, audit, allow;
  };
  std::vector<Case> cases(6);
  cases[0].name = "account";
  cases[0].request.set_account("leash-a");
  cases[0].block = true, cases[0].audit = true, cases[0].allow = false;
  cases[1].name = "surface";
  cases[1].request.set_surface("filesystem");
  cases[1].block = false, cases[1].audit = true, cases[1].allow = false;
  cases[2].name = "action";
  cases[2].request.set_action("block");
  cases[2].block = true, cases[2].audit = true, cases[2].allow = false;
  cases[3].name = "enforced";
  cases[3].request.set_enforced(true);
  cases[3].block = true, cases[3].audit = false, cases[3].allow = true;
  cases[4].name = "not enforced";
  cases[4].request.set_enforced(false);
  cases[4].block = false, cases[4].audit = true, cases[4].allow = false;
  cases[5].name = "until";
  cases[5].request.set_until("2026-12-02T10:00:01Z");
  cases[5].block = true, cases[5].audit = true, cases[5].allow = false;
  for (const Case& c : cases) {
    absl::StatusOr<DecisionFilter> filter = FilterFromRequest(c.request);
    ASSERT_TRUE(filter.ok()) << c.name << ": " << filter.status();
    EXPECT_EQ(filter->Matches(Decision(kBlock, "leash-a")), c.block) << c.name;
    EXPECT_EQ(filter->Matches(Decision(kAuditBlock, "leash-a")), c.audit) << c.name;
    EXPECT_EQ(filter->Matches(Decision(kAllow, "leash-b")), c.allow) << c.name;
  }
}

TEST(DecisionFilterTest, RefusesWhatDoesNotRead) {
  leash::v1::WatchDecisionsRequest request;
  request.set_surface("disk");
  EXPECT_THAT(FilterFromRequest(request).status().message(), HasSubstr("surface 'disk'"));
  request.Clear();
  request.set_action("deny");
  EXPECT_THAT(FilterFromRequest(request).status().message(), HasSubstr("action 'deny'"));
  request.Clear();
  request.set_until("yesterday");
  EXPECT_EQ(FilterFromRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(FilterFromRequest(request).status().message(), HasSubstr("until"));
}

TEST(DecisionFilterTest, ParsesLinesAndRefusesOthers) {
  absl::StatusOr<leash::v1::DecisionRecord> record = ParseDecisionLine(kAuditBlock);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->subject().path(), "/etc/x");
  EXPECT_TRUE(record->has_enforced());
  EXPECT_FALSE(record->enforced());
  EXPECT_EQ(ParseDecisionLine("not json").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace leash::controlplane
