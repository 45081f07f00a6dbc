// Audit mode for real: an agent bound to a profile that puts every surface of its whitelist
// floor in audit opens a file, runs a program, connects to a port and calls a tool that the
// policy would block. Each succeeds, and each is in the decision log once, as a block with
// enforced: false; `leash status` counts the subject's would-be blocks per surface exactly as
// its enforced: false lines do. Unbound (audit off, which takes no ack), the same four are
// blocked, and the counts do not move. And rule L4: a deny written above the tier that set
// audit stays enforced on every surface.
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
using ::testing::Not;

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
      EXPECT_THAT(line, Not(HasSubstr("enforced"))) << line;
    }
  }
  // The blocks made are not would-be blocks: the counts stay those of the audited run once the
  // sidecars' next heartbeats (every second at most) are in.
  absl::SleepFor(absl::Milliseconds(1500));
  EXPECT_EQ(LogCounts(), audited_counts);
  ExpectStatusCountsTheLog();
}

// Rule L4 for real: audit never lifts a deny written above it. The floor denies a file, a
// program, a port, a DNS name and a tool; the agent's own profile puts every surface in audit
// and denies one more of each. Under audit the floor's five stay blocked, logged as blocks with
// enforced: true, while the agent's own five (and a miss of the floor's tools whitelist) are
// let through, logged enforced: false. Nothing the agent is answered says it is audited.
class AuditKeepsDeniesWrittenAboveItTest : public WorkloadTest {
 protected:
  void SetUp() override {
    WorkloadTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("lak", {"leash-lka"}, "laudkeep"));
    ASSERT_NO_FATAL_FAILURE(MakeWorld());
    const std::string& root = fs_->path();
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"192.0.2.11/32:8080\", \"own-denied.test\"], ",
        "deny: [\"192.0.2.11/32:8081\", \"floor-denied.test\"] }\n",
        "filesystem: { mode: blacklist, allow: [], deny: [\"", root, "/outside.txt\"] }\n",
        "commands: { mode: blacklist, allow: [], deny: [\"", root, "/bin/tool-three\"] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\", \"own_tool\"], deny: [\"floor_tool\"] }\n"))));
  }

  // Binds the agent to a profile that puts every surface in audit and denies one more of each.
  void BindObserve() {
    const std::string& root = fs_->path();
    const std::string observe = WriteProfile(
        "observe",
        absl::StrCat("network: { audit: true, deny: [\"192.0.2.11/32:8080\", \"own-denied.test\"] }\n",
                     "filesystem: { audit: true, deny: [\"", root, "/work/c.txt\"] }\n",
                     "commands: { audit: true, deny: [\"", root, "/bin/tool-two\"] }\n",
                     "tools: { audit: true, deny: [\"own_tool\"] }\n"));
    ASSERT_EQ(Leash({"profile", "save", "observe", "--from", observe}).exit_code, 0);
    RunResult bound = Leash({"bind", "agent:" + agent_->name(), "observe", "--ack",
                             "network.audit:true", "--ack", "filesystem.audit:true", "--ack",
                             "commands.audit:true", "--ack", "tools.audit:true"});
    ASSERT_EQ(bound.exit_code, 0) << bound.out;
  }

  // Each try prints "<label> allowed" or "<label> refused"; a DNS question prints its rcode
  // ("<label> rcode 3" is NXDOMAIN) or "<label> no answer".
  std::string Script() const {
    const std::string& root = fs_->path();
    return absl::StrCat(
        "import socket, struct, subprocess, urllib.request\n",
        "def attempt(label, act):\n",
        "  try:\n    act(); print(label, 'allowed')\n",
        "  except Exception as e: print(label, 'refused', type(e).__name__)\n",
        "attempt('floor-file', lambda: open('", root, "/outside.txt').read())\n",
        "attempt('own-file', lambda: open('", root, "/work/c.txt').read())\n",
        "attempt('floor-exec', lambda: subprocess.run(['", root, "/bin/tool-three'], check=True))\n",
        "attempt('own-exec', lambda: subprocess.run(['", root, "/bin/tool-two'], check=True))\n",
        "attempt('floor-port', lambda: urllib.request.urlopen('http://192.0.2.11:8081/', "
        "timeout=10).read())\n",
        "attempt('own-port', lambda: urllib.request.urlopen('http://192.0.2.11:8080/', "
        "timeout=10).read())\n",
        "def ask(label, name):\n",
        "  q = struct.pack('>HHHHHH', 0x4c34, 0x0100, 1, 0, 0, 0)\n",
        "  q += b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\\0'\n",
        "  q += struct.pack('>HH', 1, 1)\n",
        "  s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)\n",
        "  s.sendto(q, ('192.0.2.53', 53))\n",
        "  try: print(label, 'rcode', s.recv(512)[3] & 15)\n",
        "  except OSError: print(label, 'no answer')\n",
        "ask('floor-dns', 'floor-denied.test')\n",
        "ask('own-dns', 'own-denied.test')\n");
  }

};

TEST_F(AuditKeepsDeniesWrittenAboveItTest, AuditNeverLiftsADenyWrittenAboveItOnAnySurface) {
  ASSERT_NO_FATAL_FAILURE(BindObserve());
  RunResult run = AsAgent(Script());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  for (const char* said : {"floor-file refused", "floor-exec refused", "floor-port refused",
                           "floor-dns rcode 3", "own-file allowed", "own-exec allowed",
                           "own-port allowed"}) {
    EXPECT_THAT(run.out, HasSubstr(said)) << run.out;
  }
  // The name the agent's own tier denies is forwarded, not answered NXDOMAIN by the filter.
  EXPECT_THAT(run.out, Not(HasSubstr("own-dns rcode 3"))) << run.out;

  // Tools: the floor's deny is an error to the harness; the agent's own deny and a miss of
  // the floor's whitelist are answered as any allow is, with nothing about audit.
  EXPECT_EQ(ToolCheck("floor_tool"), 1);
  RunResult own = Leash({"tool", "check", "own_tool", "--account", agent_->name(),
                         "--tools-socket=" + leashd_->tools_socket(), "--inputs", "{}"});
  EXPECT_EQ(own.exit_code, 0) << own.out;
  EXPECT_THAT(own.out, HasSubstr("allow  tools: own_tool allowed")) << own.out;
  for (const char* word : {"audit", "enforced", "deny", "block"}) {
    EXPECT_THAT(own.out, Not(HasSubstr(word))) << own.out;
  }
  EXPECT_EQ(ToolCheck("forbidden_tool"), 0);

  const std::string& root = fs_->path();
  const std::vector<std::string> kept = {
      absl::StrCat("\"path\":\"", root, "/outside.txt\""),
      absl::StrCat("\"binary\":\"", root, "/bin/tool-three\""), "\"port\":8081",
      "floor-denied.test", "\"name\":\"floor_tool\""};
  const std::vector<std::string> lifted = {
      absl::StrCat("\"path\":\"", root, "/work/c.txt\""),
      absl::StrCat("\"binary\":\"", root, "/bin/tool-two\""), "\"port\":8080",
      "own-denied.test", "\"name\":\"own_tool\"", "\"name\":\"forbidden_tool\""};
  // The log is written after the answers.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto* needles : {&kept, &lifted}) {
          for (const std::string& needle : *needles) {
            if (AgentLines(0, needle).empty()) return false;
          }
        }
        return true;
      },
      absl::Seconds(20)))
      << ReadAll(decisions());
  // Each is logged as the block it is: kept with enforced: true, lifted with enforced: false,
  // and never the other way (a lifted DNS question may have a line for its forwarding too).
  for (const std::string& needle : kept) {
    EXPECT_THAT(AgentLines(0, needle),
                ::testing::Each(::testing::AllOf(HasSubstr("\"action\":\"block\""),
                                                 HasSubstr("\"enforced\":true"))))
        << needle << "\n" << ReadAll(decisions());
  }
  for (const std::string& needle : lifted) {
    const std::vector<std::string> lines = AgentLines(0, needle);
    EXPECT_THAT(lines, ::testing::Contains(::testing::AllOf(HasSubstr("\"action\":\"block\""),
                                                            HasSubstr("\"enforced\":false"))))
        << needle << "\n" << ReadAll(decisions());
    EXPECT_THAT(lines, ::testing::Each(Not(HasSubstr("\"enforced\":true")))) << needle;
  }
}

// One tier up: audit set by the global binding covers the global binding's own denies, never
// the floor's, for every subject (the configured user and an agent with no binding of its own).
TEST_F(AuditKeepsDeniesWrittenAboveItTest, UnderAGlobalAuditTheFloorsDeniesStayEnforced) {
  const std::string& root = fs_->path();
  const std::string global = WriteProfile(
      "gobserve", absl::StrCat("filesystem: { audit: true, deny: [\"", root, "/work/c.txt\"] }\n"));
  ASSERT_EQ(Leash({"profile", "save", "gobserve", "--from", global}).exit_code, 0);
  RunResult bound = Leash({"bind", "global", "gobserve", "--ack", "filesystem.audit:true"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;

  const size_t mark = LogSize();
  for (const TestAccount* who : {agent_, user_}) {
    RunResult run = AsAgent(
        absl::StrCat("def attempt(label, act):\n",
                     "  try:\n    act(); print(label, 'allowed')\n",
                     "  except Exception as e: print(label, 'refused', type(e).__name__)\n",
                     "attempt('floor-file', lambda: open('", root, "/outside.txt').read())\n",
                     "attempt('global-file', lambda: open('", root, "/work/c.txt').read())\n"),
        who);
    EXPECT_THAT(run.out, HasSubstr("floor-file refused")) << who->name() << "\n" << run.out;
    EXPECT_THAT(run.out, HasSubstr("global-file allowed")) << who->name() << "\n" << run.out;
  }
  const std::string floor_needle = absl::StrCat("\"path\":\"", root, "/outside.txt\"");
  const std::string global_needle = absl::StrCat("\"path\":\"", root, "/work/c.txt\"");
  auto lines_of = [&](const TestAccount* who, const std::string& needle) {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(ReadAll(decisions()).substr(mark), '\n')) {
      if (absl::StrContains(line, absl::StrCat("\"uid\":", who->uid(), ",")) &&
          absl::StrContains(line, needle)) {
        out.emplace_back(line);
      }
    }
    return out;
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        return !lines_of(agent_, global_needle).empty() && !lines_of(user_, global_needle).empty();
      },
      absl::Seconds(20)))
      << ReadAll(decisions());
  for (const TestAccount* who : {agent_, user_}) {
    EXPECT_THAT(lines_of(who, floor_needle),
                ::testing::ElementsAre(::testing::AllOf(HasSubstr("\"action\":\"block\""),
                                                        HasSubstr("\"enforced\":true"))))
        << who->name() << "\n" << ReadAll(decisions());
    EXPECT_THAT(lines_of(who, global_needle),
                ::testing::ElementsAre(::testing::AllOf(HasSubstr("\"action\":\"block\""),
                                                        HasSubstr("\"enforced\":false"))))
        << who->name() << "\n" << ReadAll(decisions());
  }
}

}  // namespace
}  // namespace leash::testing
