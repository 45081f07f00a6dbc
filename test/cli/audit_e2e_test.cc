// Audit mode for real: an agent bound to a profile that puts every surface of its whitelist
// floor in audit opens a file, runs a program, connects to a port and calls a tool that the
// policy would block. Each succeeds, and each is in the decision log once, as a block with
// enforced: false; `leash status` counts the subject's would-be blocks per surface exactly as
// its enforced: false lines do. Unbound (audit off, which takes no ack), the same four are
// blocked, and the counts do not move.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/cli/workload_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;

class AuditEndToEndTest : public WorkloadTest {
 protected:
  void SetUp() override {
    WorkloadTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("lau", {"leash-laa"}, "laudit"));
    // On the watched tmpfs a work tree the agent may read, a file beside it it may not, a
    // program it may run (tool-one) and one it may not (tool-three).
    ASSERT_NO_FATAL_FAILURE(MakeWorld());
    // A whitelist on every surface. The program files are readable (an exec also opens them),
    // so the exec is judged by commands alone.
    const std::string& root = fs_->path();
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"192.0.2.11/32:8080\"], deny: [] }\n",
        "filesystem: { mode: whitelist, allow: [\"", root, "/work\", \"", root,
        "/bin\"], deny: [] }\n",
        "commands: { mode: whitelist, allow: [\"", root, "/bin/tool-one\"], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n"))));
  }

  // The allowed action and the four the policy blocks, each reporting what happened.
  RunResult Workload() {
    const std::string& root = fs_->path();
    return AsAgent(absl::StrCat(
        "import subprocess, urllib.request\n",
        "open('", root, "/work/a.txt').read(); print('work read')\n",
        "subprocess.run(['", root, "/bin/tool-one'], check=True); print('tool-one ran')\n",
        "urllib.request.urlopen('http://192.0.2.11:8080/', timeout=10).read(); print('8080 ok')\n",
        TryOutside()));
  }

  // The agent's enforced: false lines of `surface` in the whole log.
  size_t NotEnforcedLines(const std::string& surface) {
    size_t n = 0;
    for (const std::string& line : AgentLines(0, "\"enforced\":false")) {
      n += absl::StrContains(line, absl::StrCat("\"surface\":\"", surface, "\""));
    }
    return n;
  }

  // The agent's would-be blocks per surface as `leash status --json` counts them ("network" ->
  // 12, ...); empty when its subject or its counts are not in the answer.
  std::map<std::string, uint64_t> StatusCounts() {
    std::map<std::string, uint64_t> out;
    const std::string json = Leash({"status", "--json"}).out;
    const size_t subject = json.find(absl::StrCat("\"account\":\"", agent_->name(), "\""));
    if (subject == std::string::npos) return out;
    const std::string key = "\"would_be_blocks\":{";
    const size_t at = json.find(key, subject);
    if (at == std::string::npos) return out;
    const size_t end = json.find('}', at);
    for (absl::string_view pair : absl::StrSplit(
             absl::string_view(json).substr(at + key.size(), end - at - key.size()), ',')) {
      std::vector<std::string> parts = absl::StrSplit(pair, ':');
      uint64_t count = 0;
      if (parts.size() == 2 && absl::SimpleAtoi(parts[1], &count)) {
        out[std::string(absl::StripPrefix(absl::StripSuffix(parts[0], "\""), "\""))] = count;
      }
    }
    return out;
  }

  // What the log's enforced: false lines of the agent count, per surface.
  std::map<std::string, uint64_t> LogCounts() {
    std::map<std::string, uint64_t> out;
    for (const char* surface : {"network", "filesystem", "commands", "tools"}) {
      out[surface] = NotEnforcedLines(surface);
    }
    return out;
  }

  // Waits (the sidecars' counts travel on their heartbeats) until `leash status --json` counts
  // the agent's would-be blocks as its log lines do, surface by surface, and says where not.
  void ExpectStatusCountsTheLog() {
    WaitFor([&] { return StatusCounts() == LogCounts(); }, absl::Seconds(10));
    const std::map<std::string, uint64_t> status = StatusCounts();
    const std::map<std::string, uint64_t> log = LogCounts();
    ASSERT_EQ(status.size(), 4u) << Leash({"status", "--json"}).out;
    for (const auto& [surface, count] : log) {
      EXPECT_EQ(status.at(surface), count)
          << surface << ": leash status counts " << status.at(surface) << ", the log has "
          << count << " enforced: false lines\n"
          << ReadAll(decisions());
    }
  }

  // What the four would-be blocks are found by in their lines.
  std::vector<std::string> Needles() const {
    return {absl::StrCat("\"path\":\"", fs_->path(), "/outside.txt\""),
            absl::StrCat("\"binary\":\"", fs_->path(), "/bin/tool-three\""), "\"port\":8081",
            "\"name\":\"forbidden_tool\""};
  }

  // Whether each of the four has a line of the agent in the log from byte `from` on.
  bool EachNeedleLogged(size_t from) const {
    for (const std::string& needle : Needles()) {
      if (AgentLines(from, needle).empty()) return false;
    }
    return true;
  }
};

TEST_F(AuditEndToEndTest, WouldBeBlocksAreAllowedAndLoggedOnceNotEnforcedThenBlockedWithoutAudit) {
  const std::string observe = WriteProfile(
      "observe",
      "network: { audit: true }\nfilesystem: { audit: true }\n"
      "commands: { audit: true }\ntools: { audit: true }\n");
  ASSERT_EQ(Leash({"profile", "save", "observe", "--from", observe}).exit_code, 0);
  RunResult bound = Leash({"bind", "agent:" + agent_->name(), "observe", "--ack",
                           "network.audit:true", "--ack", "filesystem.audit:true", "--ack",
                           "commands.audit:true", "--ack", "tools.audit:true"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;

  RunResult audited = Workload();
  EXPECT_EQ(audited.exit_code, 0) << audited.out;
  for (const char* said : {"work read", "tool-one ran", "8080 ok", "file allowed", "exec allowed",
                           "port allowed"}) {
    EXPECT_THAT(audited.out, HasSubstr(said));
  }
  EXPECT_EQ(ToolCheck("forbidden_tool"), 0);
  EXPECT_EQ(ToolCheck("read_file"), 0);
  // The log is written after the answers.
  ASSERT_TRUE(WaitFor([&] { return EachNeedleLogged(0); }, absl::Seconds(20)))
      << ReadAll(decisions());
  absl::SleepFor(absl::Milliseconds(500));
  for (const std::string& needle : Needles()) {
    const std::vector<std::string> lines = AgentLines(0, needle);
    ASSERT_EQ(lines.size(), 1u) << needle << "\n" << ReadAll(decisions());
    EXPECT_THAT(lines[0], HasSubstr("\"action\":\"block\"")) << lines[0];
    EXPECT_THAT(lines[0], HasSubstr("\"enforced\":false")) << lines[0];
  }
  // What the policy allows stays an allow, with no enforced field.
  for (const std::string& line : AgentLines(0, "\"enforced\"")) {
    EXPECT_THAT(line, HasSubstr("\"action\":\"block\"")) << line;
  }
  EXPECT_THAT(AgentLines(0, "\"name\":\"read_file\""),
              ::testing::Each(HasSubstr("\"action\":\"allow\"")));

  // `leash status` counts what audit let through exactly as the log's enforced: false lines
  // of the subject do, surface by surface, each at least the one block above, and says it
  // beside each audited surface.
  ExpectStatusCountsTheLog();
  const std::map<std::string, uint64_t> audited_counts = LogCounts();
  for (const auto& [surface, count] : audited_counts) EXPECT_GE(count, 1u) << surface;
  const std::string human = Leash({"status"}).out;
  for (const auto& [surface, capitals] : std::vector<std::pair<std::string, std::string>>{
           {"network", "NETWORK"}, {"filesystem", "FILESYSTEM"}, {"commands", "COMMANDS"},
           {"tools", "TOOLS"}}) {
    const uint64_t n = audited_counts.at(surface);
    EXPECT_THAT(human, HasSubstr(absl::StrCat(capitals, " (", n,
                                              n == 1 ? " would-be block)" : " would-be blocks)")))
        << human;
  }

  // Audit off: unbinding tightens, so it takes no ack; the same four are blocked, for real.
  RunResult unbound = Leash({"unbind", "agent:" + agent_->name()});
  ASSERT_EQ(unbound.exit_code, 0) << unbound.out;
  const size_t mark = LogSize();
  RunResult enforced = Workload();
  EXPECT_EQ(enforced.exit_code, 0) << enforced.out;
  for (const char* said : {"work read", "tool-one ran", "8080 ok", "file refused", "exec refused",
                           "port refused"}) {
    EXPECT_THAT(enforced.out, HasSubstr(said));
  }
  EXPECT_EQ(ToolCheck("forbidden_tool"), 1);
  ASSERT_TRUE(WaitFor([&] { return EachNeedleLogged(mark); }, absl::Seconds(20)))
      << ReadAll(decisions());
  for (const std::string& needle : Needles()) {
    for (const std::string& line : AgentLines(mark, needle)) {
      EXPECT_THAT(line, HasSubstr("\"action\":\"block\"")) << line;
      EXPECT_THAT(line, ::testing::Not(HasSubstr("enforced"))) << line;
    }
  }
  // The blocks made are not would-be blocks: the counts stay those of the audited run once the
  // sidecars' next heartbeats (every second at most) are in.
  absl::SleepFor(absl::Milliseconds(1500));
  EXPECT_EQ(LogCounts(), audited_counts);
  ExpectStatusCountsTheLog();
}

}  // namespace
}  // namespace leash::testing
