// The whole learning flow in one run, as an operator adopting Leash for an agent meets it: the
// agent works under a whitelist with every surface in audit (two by the floor, two by its
// profile), while `leash logs --follow --json` watches; its workload (HTTP to a test host, a
// file tree read in, two commands, a tool call) succeeds, and each would-be block is in the
// stream and in the log once, with enforced: false. `leash suggest` turns the log into a
// profile; the `leash profile save` and `leash bind` lines it prints are run as printed, which
// turns audit off (the profile's own `audit: false` over the floor's, the new binding in place
// of the audit profile). Then the same workload runs with no block at all, and what lies
// outside the suggestion (another file, command, port and tool) is blocked and logged as
// enforced.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "leash/v1/decision.pb.h"
#include "test/cli/hello_server.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// One decision line of the log or the stream, read back into its record.
struct Line {
  leash::v1::DecisionRecord record;
  std::string text;

  bool Block() const { return record.action() == "block"; }
  // A would-be block: logged as a block that audit let through.
  bool NotEnforced() const { return record.has_enforced() && !record.enforced(); }
  // "<surface> <what>": what the decision was about, as the tests name it.
  std::string Key() const {
    const leash::v1::Subject& s = record.subject();
    std::string what = s.path();
    if (what.empty()) what = s.binary();
    if (what.empty()) what = s.name();
    if (what.empty()) what = absl::StrCat(s.ip().empty() ? s.domain() : s.ip(), ":", s.port());
    return absl::StrCat(record.surface(), " ", what);
  }
};

// The decision lines of `text` from byte `from` on that belong to `uid`. Lines that are no
// decision record (the stream's notices) are left out.
std::vector<Line> LinesOf(const std::string& text, size_t from, uid_t uid) {
  std::vector<Line> out;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  for (absl::string_view raw : absl::StrSplit(
           absl::string_view(text).substr(std::min(from, text.size())), '\n',
           absl::SkipEmpty())) {
    Line line;
    line.text = std::string(raw);
    if (!google::protobuf::util::JsonStringToMessage(line.text, &line.record, options).ok() ||
        line.record.ref().empty() || line.record.uid() != uid) {
      continue;
    }
    out.push_back(std::move(line));
  }
  return out;
}

class LearnFlowTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_TRUE(ns_->AddVethPair({"192.0.2.10/24"}, {"192.0.2.11/24"}).ok());
    ASSERT_NE(MountTmpfs(), nullptr);
    user_ = AddAccount("llf" + RunTag());
    ASSERT_NE(user_, nullptr);
    agent_ = AddAccount("leash-lfa" + RunTag());
    ASSERT_NE(agent_, nullptr);
    ASSERT_NE(MakeFiles("llearn"), nullptr);

    // The agent's world on the watched tmpfs: a work tree, a file beside it, three programs.
    const std::string& root = fs_->path();
    for (const char* dir : {"/work", "/work/sub", "/bin"}) {
      ASSERT_EQ(mkdir((root + dir).c_str(), 0755), 0) << dir;
    }
    for (const char* file : {"/work/a.txt", "/work/b.txt", "/work/c.txt", "/work/sub/d.txt",
                             "/outside.txt"}) {
      std::ofstream(root + file) << "text\n";
      chmod((root + file).c_str(), 0644);
    }
    for (const char* program : {"/bin/tool-one", "/bin/tool-two", "/bin/tool-three"}) {
      ASSERT_TRUE(RunOk({"cp", "/bin/true", root + program}).ok());
      chmod((root + program).c_str(), 0755);
    }
    std::ofstream(files_->Join("server.py")) << kHelloServerPy;
    for (const char* port : {"8080", "8081"}) {
      auto server = Background::Start(
          ns_->ExecSharingMounts({"/usr/bin/python3", files_->Join("server.py"), port}));
      ASSERT_TRUE(server.ok()) << server.status();
      servers_.push_back(*std::move(server));
    }
    ASSERT_TRUE(WaitFor(
        [&] {
          auto listening = ns_->Run({"ss", "-Hltn", "sport = :8080 or sport = :8081"});
          return listening.ok() && absl::StrContains(listening->out, ":8080") &&
                 absl::StrContains(listening->out, ":8081");
        },
        absl::Seconds(30)));

    // A narrow whitelist on every surface: of the workload it allows only the first command
    // (and the programs' files, which an exec also opens) and the tool read_file; everything
    // else the workload does is a would-be block under audit. The floor itself audits two
    // surfaces (root writes it: no ack), the agent's profile the other two.
    const std::string floor = absl::StrCat(
        "user: ", user_->name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"192.0.2.99/32\"], deny: [], audit: true }\n",
        "filesystem: { mode: whitelist, allow: [\"", root, "/bin\"], deny: [] }\n",
        "commands: { mode: whitelist, allow: [\"", root, "/bin/tool-one\"], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [], audit: true }\n",
        "logging: { level: info, decisions: ", decisions(), " }\n");
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  std::string decisions() const { return files_->Join("decisions.jsonl"); }
  std::string stream() const { return files_->Join("stream.jsonl"); }

  // `leash <args>` against this leashd.
  std::vector<std::string> LeashArgs(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {RunfilePath("cli/leash"),
                                     "--config=" + leashd_->config_path(),
                                     "--socket=" + leashd_->admin_socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  RunResult Leash(const std::vector<std::string>& args) {
    auto run = leash::testing::Run(LeashArgs(args), absl::Seconds(120));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunResult();
  }

  // The harness's call for the agent, as `leash tool check` makes it; its exit code.
  int ToolCheck(const std::string& tool) {
    return Leash({"tool", "check", tool, "--account", agent_->name(),
                  "--tools-socket=" + leashd_->tools_socket(), "--inputs", "{}"})
        .exit_code;
  }

  RunResult AsAgent(const std::string& script) {
    auto run = leash::testing::Run(
        ns_->ExecSharingMounts(agent_->AsUser({"/usr/bin/python3", "-c", script})),
        absl::Seconds(60));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunResult();
  }

  // The workload: an HTTP request, a file tree read in, two commands, one tool call. Each
  // must succeed; the script stops at the first that does not.
  void Workload(const std::string& when) {
    const std::string& root = fs_->path();
    RunResult run = AsAgent(absl::StrCat(
        "import subprocess, urllib.request\n",
        "print('http', urllib.request.urlopen('http://192.0.2.11:8080/', timeout=10).read()"
        ".decode().strip())\n",
        "for f in ['a.txt', 'b.txt', 'c.txt', 'sub/d.txt']:\n",
        "  open('", root, "/work/' + f).read()\n",
        "subprocess.run(['", root, "/bin/tool-one'], check=True)\n",
        "subprocess.run(['", root, "/bin/tool-two'], check=True)\n",
        "print('workload done')\n"));
    EXPECT_EQ(run.exit_code, 0) << when << "\n" << run.out;
    EXPECT_THAT(run.out, HasSubstr("http hello")) << when;
    EXPECT_THAT(run.out, HasSubstr("workload done")) << when;
    EXPECT_EQ(ToolCheck("search_web"), 0) << when;
  }

  // What the workload does, keyed as Line::Key names it.
  std::set<std::string> WorkloadKeys() const {
    const std::string& root = fs_->path();
    return {"network 192.0.2.11:8080",
            absl::StrCat("filesystem ", root, "/work/a.txt"),
            absl::StrCat("filesystem ", root, "/work/b.txt"),
            absl::StrCat("filesystem ", root, "/work/c.txt"),
            absl::StrCat("filesystem ", root, "/work/sub/d.txt"),
            absl::StrCat("commands ", root, "/bin/tool-one"),
            absl::StrCat("commands ", root, "/bin/tool-two"),
            "tools search_web"};
  }
  // Of those, what the floor's whitelist would block: all but the first command.
  std::set<std::string> WouldBeBlocked() const {
    std::set<std::string> keys = WorkloadKeys();
    keys.erase(absl::StrCat("commands ", fs_->path(), "/bin/tool-one"));
    return keys;
  }

  std::vector<Line> LogLines(size_t from = 0) const {
    return LinesOf(ReadAll(decisions()), from, agent_->uid());
  }
  std::vector<Line> StreamLines(size_t from = 0) const {
    return LinesOf(ReadAll(stream()), from, agent_->uid());
  }

  // Whether `lines` hold a line for each of `keys` that `pick` accepts.
  static bool Covers(const std::vector<Line>& lines, const std::set<std::string>& keys,
                     bool (*pick)(const Line&)) {
    std::set<std::string> seen;
    for (const Line& line : lines) {
      if (pick(line)) seen.insert(line.Key());
    }
    for (const std::string& key : keys) {
      if (!seen.count(key)) return false;
    }
    return true;
  }

  const TestAccount* user_ = nullptr;
  const TestAccount* agent_ = nullptr;
  std::vector<Background> servers_;
  std::unique_ptr<LeashdInstance> leashd_;
};

bool IsWouldBeBlock(const Line& line) { return line.Block() && line.NotEnforced(); }
bool IsEnforcedBlock(const Line& line) { return line.Block() && !line.record.has_enforced(); }
bool IsAllow(const Line& line) { return line.record.action() == "allow"; }

TEST_F(LearnFlowTest, ObserveSuggestBindThenTheWorkloadRunsUnblockedAndTheRestIsBlocked) {
  const std::string root = fs_->path();

  // 0. Bringing the agent in is not a block: leashd's start onboarded it without writing a line
  // that `leash logs --action block`, or suggest reading the same lines, would show.
  RunResult logged_blocks = Leash({"logs", "--action", "block", "--json"});
  ASSERT_EQ(logged_blocks.exit_code, 0) << logged_blocks.out;
  EXPECT_EQ(logged_blocks.out, "") << "blocks logged before the agent did anything";

  // 1. Every surface in audit: network and tools by the floor, files and commands by the
  // agent's profile, with the acks turning audit on takes.
  std::ofstream(files_->Join("observe.yaml"))
      << "filesystem: { audit: true }\ncommands: { audit: true }\n";
  RunResult saved = Leash({"profile", "save", "observe", "--from", files_->Join("observe.yaml")});
  ASSERT_EQ(saved.exit_code, 0) << saved.out;
  RunResult bound = Leash({"bind", "agent:" + agent_->name(), "observe", "--ack",
                           "filesystem.audit:true", "--ack", "commands.audit:true"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;

  // 2. The live stream, from before the workload: --tail 0 replays nothing, so the marker's
  // line reaching it shows it subscribed. The log is compared from the same point.
  const size_t log_start = ReadAll(decisions()).size();
  auto follow = Background::Start(
      LeashArgs({"logs", "--follow", "--json", "--account", agent_->name(), "--tail", "0"}),
      stream());
  ASSERT_TRUE(follow.ok()) << follow.status();
  bool subscribed = false;
  for (int attempt = 0; attempt < 10 && !subscribed; ++attempt) {
    ASSERT_EQ(ToolCheck("read_file"), 0);
    subscribed = WaitFor(
        [&] {
          for (const Line& line : StreamLines()) {
            if (line.Key() == "tools read_file") return true;
          }
          return false;
        },
        absl::Seconds(3));
  }
  ASSERT_TRUE(subscribed) << ReadAll(stream());

  // 3. The workload, under audit: all of it succeeds.
  Workload("under audit");

  // 4. Each would-be block once in the log and once in the stream, the same lines by ref.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Covers(LogLines(log_start), WouldBeBlocked(), IsWouldBeBlock) &&
               Covers(StreamLines(), WouldBeBlocked(), IsWouldBeBlock);
      },
      absl::Seconds(30)))
      << "log:\n" << ReadAll(decisions()) << "\nstream:\n" << ReadAll(stream());
  absl::SleepFor(absl::Seconds(1));  // a duplicate, if one were written, has landed
  std::map<std::string, std::string> log_refs, stream_refs;  // ref -> key
  std::map<std::string, int> log_keys, stream_keys;
  for (const Line& line : LogLines(log_start)) {
    if (!line.Block()) continue;
    EXPECT_TRUE(line.NotEnforced()) << "an enforced block under audit: " << line.text;
    EXPECT_TRUE(log_refs.emplace(line.record.ref(), line.Key()).second) << line.text;
    ++log_keys[line.Key()];
  }
  for (const Line& line : StreamLines()) {
    if (!line.Block()) continue;
    EXPECT_TRUE(line.NotEnforced()) << "an enforced block under audit: " << line.text;
    EXPECT_TRUE(stream_refs.emplace(line.record.ref(), line.Key()).second) << line.text;
    ++stream_keys[line.Key()];
  }
  EXPECT_EQ(log_refs, stream_refs);
  for (const std::string& key : WouldBeBlocked()) {
    EXPECT_EQ(log_keys[key], 1) << key << "\n" << ReadAll(decisions());
    EXPECT_EQ(stream_keys[key], 1) << key << "\n" << ReadAll(stream());
  }
  EXPECT_EQ(log_refs.size(), WouldBeBlocked().size()) << ReadAll(decisions());
  // What the floor allows stays a plain allow.
  EXPECT_TRUE(
      Covers(LogLines(log_start), {absl::StrCat("commands ", root, "/bin/tool-one")}, IsAllow));

  // 5. Suggest, as the operator does, into the file its printed lines name; then run those
  // lines as printed, with only `leash` pointed at this test's leashd.
  const std::string profile = agent_->name() + "-observed";
  auto suggested = leash::testing::Run(
      {"bash", "-c",
       absl::StrCat("cd ", files_->path(), " && ",
                    absl::StrJoin(LeashArgs({"suggest", "--account", agent_->name(),
                                             "--state-dir", leashd_->state_dir()}),
                                  " "),
                    " > ", profile, ".yaml")},
      absl::Seconds(120));
  ASSERT_TRUE(suggested.ok()) << suggested.status();
  const std::string fragment = ReadAll(files_->Join(profile + ".yaml"));
  ASSERT_EQ(suggested->exit_code, 0) << suggested->out << fragment;
  EXPECT_THAT(fragment, HasSubstr("- \"192.0.2.11/32:8080\""));
  EXPECT_THAT(fragment, HasSubstr(absl::StrCat("- \"", root, "/work\"")));
  EXPECT_THAT(fragment, HasSubstr(absl::StrCat("- \"", root, "/bin/tool-two\"")));
  EXPECT_THAT(fragment, HasSubstr("- \"search_web\""));
  // The floor's audit is turned off by the profile itself; the profile's by the new binding.
  EXPECT_THAT(fragment, HasSubstr("audit: false  # the floor audits network"));
  EXPECT_THAT(fragment, HasSubstr("audit: false  # the floor audits tools"));
  for (const char* never : {"outside.txt\"", "tool-three\"", ":8081\"", "delete_everything\"",
                            "audit: true"}) {
    EXPECT_THAT(fragment, ::testing::Not(HasSubstr(never))) << fragment;
  }
  std::vector<std::string> commands;
  for (absl::string_view line : absl::StrSplit(fragment, '\n')) {
    if (absl::ConsumePrefix(&line, "#   sudo leash ")) commands.emplace_back(line);
  }
  ASSERT_EQ(commands.size(), 2u) << fragment;
  EXPECT_THAT(commands[0], ::testing::StartsWith(absl::StrCat("profile save ", profile)));
  EXPECT_THAT(commands[1],
              ::testing::StartsWith(absl::StrCat("bind agent:", agent_->name(), " ", profile)));
  for (const std::string& ack :
       {std::string("network.allow:192.0.2.11/32:8080"),
        absl::StrCat("commands.allow:", root, "/bin/tool-two"),
        std::string("tools.allow:search_web")}) {
    EXPECT_THAT(commands[1], HasSubstr(absl::StrCat("--ack '", ack, "'"))) << fragment;
  }
  for (const std::string& command : commands) {
    auto run = leash::testing::Run(
        {"bash", "-c",
         absl::StrCat("cd ", files_->path(), " && ", absl::StrJoin(LeashArgs({}), " "), " ",
                      command)},
        absl::Seconds(120));
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->exit_code, 0) << command << "\n" << run->out;
  }

  // 6. The same workload: it all succeeds and nothing is blocked, in the log or the stream.
  const size_t log_mark = ReadAll(decisions()).size();
  const size_t stream_mark = ReadAll(stream()).size();
  Workload("under the suggested profile");
  // Every action of it is decided, and allowed, after the mark.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Covers(LogLines(log_mark), WorkloadKeys(), IsAllow) &&
               Covers(StreamLines(stream_mark), WorkloadKeys(), IsAllow);
      },
      absl::Seconds(30)))
      << "log:\n" << ReadAll(decisions()) << "\nstream:\n" << ReadAll(stream());
  absl::SleepFor(absl::Seconds(1));
  std::vector<std::string> blocks;
  for (const Line& line : LogLines(log_mark)) {
    if (line.Block()) blocks.push_back("log: " + line.text);
  }
  for (const Line& line : StreamLines(stream_mark)) {
    if (line.Block()) blocks.push_back("stream: " + line.text);
  }
  EXPECT_THAT(blocks, IsEmpty());

  // 7. What lies outside the suggestion is blocked, for real, and logged as enforced.
  const size_t log_outside = ReadAll(decisions()).size();
  const size_t stream_outside = ReadAll(stream()).size();
  RunResult outside = AsAgent(absl::StrCat(
      "import subprocess, urllib.request\n",
      "try:\n  open('", root, "/outside.txt').read(); print('file allowed')\n",
      "except PermissionError: print('file refused')\n",
      "try:\n  subprocess.run(['", root, "/bin/tool-three'], check=True); print('exec allowed')\n",
      "except PermissionError: print('exec refused')\n",
      "try:\n  urllib.request.urlopen('http://192.0.2.11:8081/', timeout=10).read(); "
      "print('port allowed')\n",
      "except Exception: print('port refused')\n"));
  for (const char* said : {"file refused", "exec refused", "port refused"}) {
    EXPECT_THAT(outside.out, HasSubstr(said));
  }
  EXPECT_EQ(ToolCheck("delete_everything"), 1);
  const std::set<std::string> outside_keys = {
      absl::StrCat("filesystem ", root, "/outside.txt"),
      absl::StrCat("commands ", root, "/bin/tool-three"), "network 192.0.2.11:8081",
      "tools delete_everything"};
  EXPECT_TRUE(WaitFor(
      [&] {
        return Covers(LogLines(log_outside), outside_keys, IsEnforcedBlock) &&
               Covers(StreamLines(stream_outside), outside_keys, IsEnforcedBlock);
      },
      absl::Seconds(30)))
      << "log:\n" << ReadAll(decisions()) << "\nstream:\n" << ReadAll(stream());
  for (const Line& line : LogLines(log_outside)) {
    EXPECT_FALSE(line.NotEnforced()) << "audit still on: " << line.text;
  }
}

}  // namespace
}  // namespace leash::testing
