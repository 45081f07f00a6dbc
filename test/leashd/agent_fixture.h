// The base of the end-to-end tests in which an agent account meets the real leashd: on top of
// RootTest's namespace, a veth pair to a remote host (192.0.2.10 here, 192.0.2.11 there), the
// tmpfs the watcher marks, the floor's user and the agent accounts, a folder for the test's
// files and the decision log, and leashd started on a floor the test writes. What such a test
// does again and again is here once: lay out files and programs on the tmpfs, start servers on
// the remote host, run `leash`, run a script as the agent, and read the agent's lines of the
// decision log or of a stream's output.
//
//   class MyTest : public AgentTest {
//    protected:
//     void SetUp() override {
//       AgentTest::SetUp();
//       if (!Ready()) return;
//       ASSERT_NO_FATAL_FAILURE(MakeHost("lmy", {"leash-lma"}, "lmy"));
//       ASSERT_NO_FATAL_FAILURE(MakeTree({"/secret"}, {"/secret/key.txt"}, {}));
//       ASSERT_NO_FATAL_FAILURE(StartLeashd(Floor(
//           "filesystem: { mode: blacklist, allow: [], deny: [\"" + fs_->path() +
//           "/secret\"] }\n")));
//     }
//   };
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/test_account.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {

class AgentTest : public RootTest {
 protected:
  // The test's host: the veth pair to the remote host, a tmpfs, the user
  // `<user_prefix><RunTag>`, one agent `<prefix><RunTag>` for each of `agent_prefixes` (agent_
  // is the first) and the folder files_. Fails the test fatally when any cannot be made.
  void MakeHost(const std::string& user_prefix, const std::vector<std::string>& agent_prefixes,
                const std::string& files_prefix);
  // A host whose leashd sees its accounts through an account view, under fixed names (the
  // floor and golden output can name them): a tmpfs, the view, the user shown as `user` and an
  // agent shown as each of `agents` (each a host account with a name unique to the run), and
  // the folder files_. No veth pair.
  void MakeViewedHost(const std::string& user, const std::vector<std::string>& agents,
                      const std::string& files_prefix);

  // On the tmpfs (paths start with '/'): folders (0755), files holding "text\n" (0644) and
  // programs that exit 0 (copies of /bin/true, 0755), made in that order.
  void MakeTree(const std::vector<std::string>& dirs, const std::vector<std::string>& files,
                const std::vector<std::string>& programs);

  // Python `script` run on the remote host once per port (as its argv[1]), kept until the test
  // ends; returns once every port listens.
  void StartServers(const std::string& script, const std::vector<int>& ports);

  // A floor for user_ that fails closed, holds `surfaces` (YAML lines) and logs every decision
  // to decisions().
  std::string Floor(const std::string& surfaces) const;
  // Starts leashd_ on `floor`, its watcher marking only the tmpfs, with the account view when
  // the test made one.
  void StartLeashd(const std::string& floor);

  std::string decisions() const { return files_->Join("decisions.jsonl"); }
  // How long the decision log is now: a mark to read it from later.
  size_t LogSize() const { return ReadAll(decisions()).size(); }

  // Writes `yaml` to <files_>/<name>.yaml; that path, for `leash profile save --from`.
  std::string WriteProfile(const std::string& name, const std::string& yaml) const;

  // `leash <args>` against this leashd, as root; the run, or an empty one (and a failure).
  RunResult Leash(const std::vector<std::string>& args);
  // The same command line, for a run in the background or through a shell (without an
  // account view's namespace).
  std::vector<std::string> LeashArgs(const std::vector<std::string>& args) const;
  // `leash <command>` run through a shell in files_, its quoting intact: a line `leash suggest`
  // prints, run as printed. Fails the test unless it runs and exits 0.
  void LeashAsPrinted(const std::string& command);
  // The harness's call of `tool` for `who` (the agent by default), as `leash tool check`
  // makes it; its exit code.
  int ToolCheck(const std::string& tool, const TestAccount* who = nullptr);

  // python3 -c `script`, run as `who` (the agent by default) in the namespace; its output, or
  // an empty run (and a failure) when it cannot be run.
  RunResult AsAgent(const std::string& script, const TestAccount* who = nullptr);

  // The agent's lines of the decision log from byte `from` on that contain `needle`.
  std::vector<std::string> AgentLines(size_t from, const std::string& needle) const;
  // Waits up to `timeout` until the file at `path` holds a line containing every one of
  // `words`; that line, or "" when none came.
  static std::string WaitForLine(const std::string& path, const std::vector<std::string>& words,
                                 absl::Duration timeout);

  const TestAccount* user_ = nullptr;
  const TestAccount* agent_ = nullptr;
  std::vector<const TestAccount*> agents_;
  std::vector<Background> servers_;
  std::unique_ptr<LeashdInstance> leashd_;
};

}  // namespace leash::testing
