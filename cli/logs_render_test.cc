// `leash logs`: flags become the request they say, and each decision one human line.
#include "cli/logs_render.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::HasSubstr;

Args ArgsWith(std::vector<std::pair<std::string, std::string>> options, bool follow = false) {
  Args args;
  args.words = {"logs"};
  args.options = std::move(options);
  args.follow = follow;
  return args;
}

TEST(LogsRequestTest, FlagsNarrowTheRequest) {
  const absl::Time now = absl::FromUnixSeconds(1800000000);
  absl::StatusOr<leash::v1::WatchDecisionsRequest> request = LogsRequest(
      ArgsWith({{"account", "leash-iris"}, {"surface", "fs"}, {"action", "block"},
                {"since", "10m"}, {"until", "2027-01-15T08:00:00Z"}},
               true),
      now);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_TRUE(request->follow());
  EXPECT_EQ(request->account(), "leash-iris");
  EXPECT_EQ(request->surface(), "filesystem");
  EXPECT_EQ(request->action(), "block");
  EXPECT_EQ(request->since(), "2027-01-15T07:50:00Z");
  EXPECT_EQ(request->until(), "2027-01-15T08:00:00Z");
  EXPECT_EQ(request->tail(), 0u);  // a start point: no tail
}

TEST(LogsRequestTest, TailByDefaultAndRefusals) {
  const absl::Time now = absl::Now();
  EXPECT_EQ(LogsRequest(ArgsWith({}), now)->tail(), 20u);
  EXPECT_EQ(LogsRequest(ArgsWith({{"tail", "3"}}), now)->tail(), 3u);
  EXPECT_EQ(LogsRequest(ArgsWith({{"ref", "abcd1234"}}), now)->tail(), 0u);
  EXPECT_THAT(LogsRequest(ArgsWith({{"action", "deny"}}), now).status().message(),
              HasSubstr("--action"));
  EXPECT_THAT(LogsRequest(ArgsWith({{"surface", "disk"}}), now).status().message(),
              HasSubstr("--surface"));
  EXPECT_THAT(LogsRequest(ArgsWith({{"since", "yesterday"}}), now).status().message(),
              HasSubstr("--since"));
  EXPECT_THAT(LogsRequest(ArgsWith({{"tail", "-1"}}), now).status().message(),
              HasSubstr("--tail"));
}

TEST(HumanLineTest, OneLinePerDecision) {
  leash::v1::WatchDecisionsEvent event;
  event.set_line("{}");
  event.set_account("leash-iris");
  leash::v1::DecisionRecord& record = *event.mutable_record();
  record.set_ts("2026-12-02T10:30:01.123456Z");
  record.set_ref("k3x9q2mw");
  record.set_uid(1001);
  record.set_surface("network");
  record.set_action("block");
  record.set_reason("not in network.allow\n(whitelist)");
  record.mutable_subject()->set_domain("evil.example");
  record.mutable_subject()->set_port(443);
  EXPECT_EQ(HumanLine(event),
            "2026-12-02 10:30:01  leash-iris  network  BLOCK  evil.example:443  not in "
            "network.allow (whitelist)  ref=k3x9q2mw");
  record.set_enforced(false);
  event.clear_account();
  record.clear_subject();
  record.set_surface("commands");
  record.mutable_subject()->set_binary("/usr/bin/curl");
  EXPECT_THAT(HumanLine(event), HasSubstr("uid 1001  commands  block (audit)  /usr/bin/curl"));
  // The agent names files, hosts and tools: a newline or escape in one prints as text, never
  // as a line of its own or a command to the terminal.
  record.mutable_subject()->set_binary(
      "/tmp/x\n2026-12-02 10:30:02  leash-iris  commands  allow  /tmp/x\r\x1b[2K");
  record.set_reason("commands: /tmp/x\x1b]0;owned\x07 not in allow list");
  const std::string forged = HumanLine(event);
  EXPECT_EQ(forged.find_first_of("\n\r\x1b\x07"), std::string::npos) << forged;
  EXPECT_THAT(forged, HasSubstr("/tmp/x\\x0a2026-12-02"));
  leash::v1::WatchDecisionsEvent notice;
  notice.set_notice("3 lines not sent");
  EXPECT_EQ(HumanLine(notice), "-- 3 lines not sent");
}

}  // namespace
}  // namespace leash::cli
