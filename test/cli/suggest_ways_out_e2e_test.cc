// The three ways out seen under audit, end to end: the agent, audited, runs the ELF loader
// directly (`ld-linux-x86-64.so.2 tool-one`), runs a program it put in a folder of its own,
// and sends two Host names of its choosing under one parent. `leash suggest` proposes none of
// them as a way out (no loader, no program the agent can replace, no wildcard: each name
// exact with its count) and lists each left out with why; the printed save and bind are run as
// printed; then the agent cannot do what each would have opened: the loader running another
// program, its program replaced and run, a third name under the same parent.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/cli/workload_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SuggestWaysOutEndToEndTest : public WorkloadTest {
 protected:
  void SetUp() override {
    WorkloadTest::SetUp();
    if (!Ready()) return;
    ASSERT_NO_FATAL_FAILURE(MakeHost("lwo", {"leash-lwa"}, "lwout"));
    ASSERT_NO_FATAL_FAILURE(MakeWorld());
    const std::string& root = fs_->path();
    // On the watched tmpfs, root's copy of the host's loader, and a folder the agent owns.
    auto loader = RunOk({"readlink", "-f", "/lib64/ld-linux-x86-64.so.2"});
    ASSERT_TRUE(loader.ok()) << loader.status();
    ASSERT_EQ(mkdir((root + "/lib").c_str(), 0755), 0);
    ASSERT_TRUE(
        RunOk({"cp", std::string(absl::StripTrailingAsciiWhitespace(*loader)), Loader()}).ok());
    ASSERT_EQ(mkdir(AgentBin().c_str(), 0755), 0);
    ASSERT_EQ(chown(AgentBin().c_str(), agent_->uid(), agent_->gid()), 0);
    // Every file on the tmpfs may be opened (the loader reads the program it runs), so what
    // runs is judged by commands alone; the network allows nothing the agent will ask for.
    ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(absl::StrCat(
        "network: { mode: whitelist, allow: [\"192.0.2.11/32:8081\"], deny: [] }\n",
        "filesystem: { mode: whitelist, allow: [\"", root, "\"], deny: [] }\n",
        "commands: { mode: whitelist, allow: [\"", root, "/bin/tool-one\"], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n"))));
  }

  std::string Loader() const { return fs_->path() + "/lib/ld-linux-x86-64.so.2"; }
  std::string AgentBin() const { return fs_->path() + "/agentbin"; }

  // Python for the agent: each try prints "<name> ran|refused|ok".
  std::string Script(const std::string& body) const {
    return absl::StrCat(
        "import os, shutil, subprocess, urllib.request\n"
        "def run(name, argv):\n"
        "  try:\n    subprocess.run(argv, check=True); print(name, 'ran')\n"
        "  except PermissionError: print(name, 'refused')\n"
        "def get(name, host):\n"
        "  try:\n"
        "    req = urllib.request.Request('http://192.0.2.11:8080/', headers={'Host': host})\n"
        "    urllib.request.urlopen(req, timeout=10).read(); print(name, 'ok')\n"
        "  except Exception: print(name, 'refused')\n"
        "def place(path):\n"
        "  if os.path.exists(path): os.remove(path)\n"
        "  shutil.copy('/bin/true', path); os.chmod(path, 0o755)\n",
        body);
  }
};

TEST_F(SuggestWaysOutEndToEndTest, SuggestProposesNothingTheAgentCouldTurnIntoAWayOut) {
  const std::string& root = fs_->path();
  const std::string mine = AgentBin() + "/mine";
  // Observation: an audit profile of the agent's own.
  const std::string observe =
      WriteProfile("observe", "network: { audit: true }\ncommands: { audit: true }\n");
  ASSERT_EQ(Leash({"profile", "save", "observe", "--from", observe}).exit_code, 0);
  RunResult bound = Leash({"bind", "agent:" + agent_->name(), "observe", "--ack",
                           "network.audit:true", "--ack", "commands.audit:true"});
  ASSERT_EQ(bound.exit_code, 0) << bound.out;

  RunResult observed = AsAgent(Script(
      absl::StrCat("run('tool-one', ['", root, "/bin/tool-one'])\n", "run('loader', ['", Loader(),
                   "', '", root, "/bin/tool-one'])\n", "place('", mine, "'); run('mine', ['", mine,
                   "'])\n", "get('a1', 'a1.herokuapp.com'); get('a1', 'a1.herokuapp.com')\n",
                   "get('b2', 'b2.herokuapp.com')\n")));
  for (const char* said : {"tool-one ran", "loader ran", "mine ran", "a1 ok", "b2 ok"}) {
    ASSERT_THAT(observed.out, HasSubstr(said)) << observed.out;
  }
  // The log is written after the answers: wait for each of the three.
  for (const std::string& needle :
       {absl::StrCat("\"binary\":\"", Loader(), "\""), absl::StrCat("\"binary\":\"", mine, "\""),
        std::string("\"domain\":\"b2.herokuapp.com\"")}) {
    ASSERT_TRUE(WaitFor([&] { return !AgentLines(0, needle).empty(); }, absl::Seconds(20)))
        << needle << "\n"
        << ReadAll(decisions());
  }
  ASSERT_TRUE(WaitFor([&] { return AgentLines(0, "\"domain\":\"a1.herokuapp.com\"").size() >= 2; },
                      absl::Seconds(20)))
      << ReadAll(decisions());

  auto suggested = leashd_->Cli({"suggest", "--account", agent_->name(), "--surface",
                                 "network,commands", "--state-dir", leashd_->state_dir()});
  ASSERT_TRUE(suggested.ok()) << suggested.status();
  ASSERT_EQ(suggested->exit_code, 0) << suggested->out;
  const std::string& text = suggested->out;
  EXPECT_THAT(text, HasSubstr("- \"a1.herokuapp.com:8080\"  # 2 times"));
  EXPECT_THAT(text, HasSubstr("- \"b2.herokuapp.com:8080\"  # 1 time"));
  EXPECT_THAT(text, Not(HasSubstr("*.herokuapp.com")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("- \"", root, "/bin/tool-one\"")));
  EXPECT_THAT(text, Not(HasSubstr(absl::StrCat("- \"", Loader(), "\""))));
  EXPECT_THAT(text, Not(HasSubstr(absl::StrCat("- \"", mine, "\""))));
  EXPECT_THAT(text,
              HasSubstr(absl::StrCat("# not suggested: commands '", Loader(), "' (1 time, ")));
  EXPECT_THAT(text, HasSubstr("): the ELF loader, which runs any program handed to it"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("# not suggested: commands '", mine, "' (1 time, ")));
  EXPECT_THAT(
      text, HasSubstr(absl::StrCat("the folder ", AgentBin(), " is owned by uid ", agent_->uid())));

  // Save the output where the printed lines expect it, and run them as printed.
  WriteProfile(agent_->name() + "-observed", text);
  const std::vector<std::string> commands = PrintedCommands(text);
  ASSERT_EQ(commands.size(), 2u) << text;
  for (const std::string& command : commands) ASSERT_NO_FATAL_FAILURE(LeashAsPrinted(command));

  // Bound: what each would have opened stays shut, and the names seen are still allowed by
  // their entries. This host resolves no name, so the proxy (which connects only to addresses
  // it resolved itself) reaches none of them: the log's reasons say what the policy decided.
  const size_t mark = LogSize();
  RunResult after = AsAgent(
      Script(absl::StrCat("run('loader', ['", Loader(), "', '", root, "/bin/tool-three'])\n",
                          "place('", mine, "'); run('mine', ['", mine, "'])\n",
                          "get('a1', 'a1.herokuapp.com'); get('c3', 'c3.herokuapp.com')\n")));
  EXPECT_THAT(after.out, HasSubstr("loader refused"));
  EXPECT_THAT(after.out, HasSubstr("mine refused"));
  EXPECT_THAT(after.out, HasSubstr("c3 refused"));
  const std::vector<std::string> needles = {absl::StrCat("\"binary\":\"", Loader(), "\""),
                                            absl::StrCat("\"binary\":\"", mine, "\""),
                                            "\"domain\":\"c3.herokuapp.com\""};
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const std::string& needle : needles) {
          if (AgentLines(mark, needle).empty()) return false;
        }
        return !AgentLines(mark, "\"domain\":\"a1.herokuapp.com\"").empty();
      },
      absl::Seconds(20)))
      << ReadAll(decisions());
  for (const std::string& needle : needles) {
    for (const std::string& line : AgentLines(mark, needle)) {
      EXPECT_THAT(line, HasSubstr("\"action\":\"block\"")) << line;
      EXPECT_THAT(line, Not(HasSubstr("\"enforced\":false"))) << line;
    }
  }
  // A third name under the parent is judged on no entry at all; a name seen is allowed by its
  // own exact entry.
  for (const std::string& line : AgentLines(mark, "\"domain\":\"c3.herokuapp.com\"")) {
    EXPECT_THAT(line, HasSubstr("c3.herokuapp.com:8080 (192.0.2.11) not in allow list")) << line;
  }
  EXPECT_THAT(AgentLines(mark, "\"domain\":\"a1.herokuapp.com\""),
              ::testing::Contains(HasSubstr("matches allow entry 'a1.herokuapp.com:8080'")))
      << ReadAll(decisions());
}

}  // namespace
}  // namespace leash::testing
