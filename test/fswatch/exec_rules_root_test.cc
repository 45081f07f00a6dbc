// The commands rules for real: leash-fswatch on a tmpfs mounted for the test, an agent account
// (unique per run) running programs there under a commands whitelist.
//
// The system's loader lives on the root filesystem, which a test never marks, so each program
// here is a copy whose PT_INTERP is rewritten to name a link (in a root-only folder under /tmp)
// to a copy of the loader on the tmpfs: the kernel then opens that loader with the exec flag
// on the marked filesystem, exactly as it opens /lib64/ld-linux-x86-64.so.2 on a host whose
// root filesystem leashd marks.
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/test_account.h"
#include "test/fixtures/tmpfs.h"
#include "test/fswatch/harness.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using leash::v1::MODE_WHITELIST;

constexpr char kEperm[] = "errno=1";
constexpr char kSystemInterp[] = "/lib64/ld-linux-x86-64.so.2";

TestAccount* g_agent = nullptr;
TestAccount* g_other = nullptr;

class ExecRulesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    for (auto [slot, role] : {std::pair{&g_agent, "a"}, {&g_other, "o"}}) {
      absl::StatusOr<std::unique_ptr<TestAccount>> account =
          TestAccount::Create(absl::StrCat("lfx", role, getpid()));
      if (account.ok()) *slot = account->release();
    }
  }
  static void TearDownTestSuite() {
    delete g_agent;
    delete g_other;
    g_agent = g_other = nullptr;
  }

  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    ASSERT_TRUE(g_agent != nullptr && g_other != nullptr) << "test accounts could not be made";
    absl::StatusOr<std::unique_ptr<TmpfsMount>> tmpfs = TmpfsMount::Create();
    ASSERT_TRUE(tmpfs.ok()) << tmpfs.status();
    tmpfs_ = *std::move(tmpfs);
    ASSERT_EQ(chmod(tmpfs_->path().c_str(), 0755), 0);
    absl::StatusOr<std::unique_ptr<ProbeDir>> probe = ProbeDir::Create();
    ASSERT_TRUE(probe.ok()) << probe.status();
    probe_ = *std::move(probe);
    for (const char* dir : {"sys", "home", "other-home", "shared"}) {
      ASSERT_EQ(mkdir(T(dir).c_str(), 0755), 0) << dir;
    }
    ASSERT_EQ(chown(T("home").c_str(), g_agent->uid(), g_agent->gid()), 0);
    ASSERT_EQ(chown(T("other-home").c_str(), g_other->uid(), g_other->gid()), 0);
    ASSERT_EQ(chmod(T("shared").c_str(), 0777), 0);

    char loader[PATH_MAX];
    ASSERT_NE(realpath(kSystemInterp, loader), nullptr) << "this test needs " << kSystemInterp;
    ASSERT_TRUE(RunOk({"cp", loader, T("sys/ld.so")}).ok());
    // The short name programs here carry as PT_INTERP (it must fit where the system's was).
    link_dir_ = absl::StrCat("/tmp/lx", getpid());
    ASSERT_EQ(mkdir(link_dir_.c_str(), 0755), 0);
    ASSERT_EQ(symlink(T("sys/ld.so").c_str(), Interp().c_str()), 0);
    ASSERT_LE(Interp().size(), strlen(kSystemInterp));

    ASSERT_TRUE(Relinked("/bin/true", T("sys/true")));
    ASSERT_TRUE(Relinked("/bin/cat", T("sys/cat")));
    ASSERT_TRUE(Relinked("/bin/true", T("sys/python3.11")));
    ASSERT_TRUE(Relinked("/bin/true", T("sys/python3.12")));
  }

  void TearDown() override {
    if (watcher_.process && watcher_.process->Running()) {
      watcher_.process->Signal(SIGTERM);
      watcher_.process->Wait(absl::Seconds(10)).IgnoreError();
    }
    if (!link_dir_.empty()) {
      unlink(Interp().c_str());
      unlink(AgentInterp().c_str());
      rmdir(link_dir_.c_str());
    }
  }

  std::string T(absl::string_view rel) const { return absl::StrCat(tmpfs_->path(), "/", rel); }
  std::string Interp() const { return link_dir_ + "/ld"; }
  // A second PT_INTERP name in root's folder, made to name a file the agent owns.
  std::string AgentInterp() const { return link_dir_ + "/la"; }

  // Copies `from` to `to` (root's, 0755) with its PT_INTERP naming `interp` (default Interp()).
  bool Relinked(const std::string& from, const std::string& to, std::string interp = "") {
    std::string bytes = ReadFileOrEmpty(from);
    const std::string old(kSystemInterp, strlen(kSystemInterp) + 1);
    const size_t at = bytes.find(old);
    if (at == std::string::npos) {
      ADD_FAILURE() << from << " does not name " << kSystemInterp;
      return false;
    }
    std::string replacement = interp.empty() ? Interp() : interp;
    if (replacement.size() >= old.size()) {
      ADD_FAILURE() << replacement << " does not fit where " << kSystemInterp << " was";
      return false;
    }
    replacement.resize(old.size(), '\0');
    bytes.replace(at, old.size(), replacement);
    return WriteFile(to, bytes, 0755).ok() && chmod(to.c_str(), 0755) == 0;
  }

  // Starts the watcher with the agent under a filesystem and commands whitelist.
  void Start(std::vector<std::string> commands,
             std::vector<std::pair<std::string, std::string>> links = {}) {
    Log();  // a watcher started earlier stops first: every group on the tmpfs would answer
    leash::v1::PolicyUpdate map;
    map.set_version(1);
    map.set_full(true);
    leash::v1::SubjectPolicy* agent = map.add_subjects();
    *agent = Subject(g_agent->uid(), g_agent->name(), MODE_WHITELIST,
                     {T("sys"), T("home"), T("shared"), T("other-home")}, {}, MODE_WHITELIST,
                     std::move(commands), {});
    for (const auto& [name, target] : links) {
      leash::v1::CommandLink* link = agent->add_command_links();
      link->set_name(name);
      link->set_target(target);
    }
    WatcherStart start;
    start.map = std::move(map);
    start.tmpfs = tmpfs_->path();
    start.work_dir = getenv("TEST_TMPDIR");
    static int started = 0;
    start.name = absl::StrCat("exec-watcher", ++started);
    absl::StatusOr<WatcherProcess> watcher = StartWatcher(start);
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = *std::move(watcher);
  }

  std::string Log() {
    if (watcher_.process && watcher_.process->Running()) {
      watcher_.process->Signal(SIGTERM);
      watcher_.process->Wait(absl::Seconds(10)).IgnoreError();
    }
    return watcher_.Log();
  }

  // The agent runs the probe; its first output line ("" when the exec worked and printed
  // nothing, "errno=1" when it was refused).
  std::string Run(const TestAccount& account, std::vector<std::string> args) {
    std::vector<std::string> argv = {probe_->probe()};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<RunResult> result = leash::testing::Run(account.AsUser(argv), absl::Seconds(20));
    if (!result.ok()) return std::string(result.status().message());
    if (result->timed_out) return "timed out";
    return std::string(absl::StripAsciiWhitespace(result->out));
  }
  std::string Exec(std::vector<std::string> argv) {
    argv.insert(argv.begin(), "exec");
    return Run(*g_agent, std::move(argv));
  }

  // The decision-log lines about `binary` on the commands surface.
  static std::vector<std::string> CommandLines(const std::string& log, const std::string& binary) {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
      if (absl::StrContains(line, "\"surface\":\"commands\"") &&
          absl::StrContains(line, absl::StrCat("\"binary\":\"", binary, "\""))) {
        out.emplace_back(line);
      }
    }
    return out;
  }

  std::unique_ptr<TmpfsMount> tmpfs_;
  std::unique_ptr<ProbeDir> probe_;
  std::string link_dir_;
  WatcherProcess watcher_;
};

TEST_F(ExecRulesTest, AnAllowedDynamicProgramRunsWithoutListingItsLoader) {
  const bool have_git = access("/usr/bin/git", X_OK) == 0;
  if (have_git) {
    ASSERT_TRUE(Relinked("/usr/bin/git", T("sys/git")));
  }
  Start({"true", "git"});
  EXPECT_THAT(watcher_.Stderr(),
              HasSubstr("ELF interpreters: an allowed program's loader is allowed as part of its "
                        "exec"));
  EXPECT_EQ(Exec({T("sys/true")}), "");
  if (have_git) {
    EXPECT_THAT(Exec({T("sys/git"), "--version"}), HasSubstr("git version"));
  }
  const std::string log = Log();
  const std::vector<std::string> loader = CommandLines(log, T("sys/ld.so"));
  ASSERT_EQ(loader.size(), have_git ? 2u : 1u) << log;
  EXPECT_THAT(loader[0], HasSubstr("\"action\":\"allow\""));
  EXPECT_THAT(loader[0], HasSubstr(absl::StrCat("is the ELF interpreter of ", T("sys/true"))));
}

TEST_F(ExecRulesTest, TheLoaderRunDirectlyIsACommandOfItsOwnAndRefused) {
  Start({"true", "cat"});
  ASSERT_TRUE(WriteFile(T("sys/readable"), "data\n").ok());
  // ld.so <binary>: would run any program the agent may read.
  EXPECT_EQ(Exec({T("sys/ld.so"), T("sys/cat"), T("sys/readable")}), kEperm);
  EXPECT_EQ(Exec({Interp(), T("sys/cat"), T("sys/readable")}), kEperm);
  // The loader is still allowed inside an allowed program's exec.
  EXPECT_EQ(Exec({T("sys/cat"), T("sys/readable")}), "data");
  const std::vector<std::string> loader = CommandLines(Log(), T("sys/ld.so"));
  ASSERT_EQ(loader.size(), 3u);
  EXPECT_THAT(loader[0], HasSubstr("not in allow list"));
}

TEST_F(ExecRulesTest, ACopyNamedGitInTheAgentsFolderIsRefusedWhileGitIsAllowed) {
  ASSERT_TRUE(Relinked("/bin/true", T("sys/git")));
  Start({"git"});
  const std::string source = access("/usr/bin/curl", R_OK) == 0 ? "/usr/bin/curl" : "/bin/cat";
  ASSERT_TRUE(RunOk(g_agent->AsUser({"cp", source, T("home/git")})).ok());
  ASSERT_TRUE(RunOk(g_agent->AsUser({"chmod", "0755", T("home/git")})).ok());
  // Another agent's download, and a rename of the agent's own copy.
  ASSERT_TRUE(RunOk(g_other->AsUser({"cp", source, T("other-home/git")})).ok());
  ASSERT_TRUE(RunOk(g_other->AsUser({"chmod", "0755", T("other-home/git")})).ok());
  ASSERT_TRUE(RunOk(g_agent->AsUser({"cp", source, T("home/curl")})).ok());
  ASSERT_TRUE(RunOk(g_agent->AsUser({"chmod", "0755", T("home/curl")})).ok());
  ASSERT_TRUE(RunOk(g_agent->AsUser({"mv", T("home/curl"), T("home/git2")})).ok());
  ASSERT_EQ(rename(T("home/git2").c_str(), T("shared/git").c_str()), 0);

  EXPECT_EQ(Exec({T("home/git")}), kEperm);
  EXPECT_EQ(Exec({T("other-home/git")}), kEperm);
  EXPECT_EQ(Exec({T("shared/git")}), kEperm);
  EXPECT_EQ(Exec({T("sys/git")}), "");
  const std::string log = Log();
  const std::vector<std::string> copy = CommandLines(log, T("home/git"));
  ASSERT_EQ(copy.size(), 1u) << log;
  EXPECT_THAT(copy[0], HasSubstr("matches allow entry 'git' by name only"));
}

TEST_F(ExecRulesTest, ARootOwnedProgramInAFolderTheAgentCanWriteIsRefusedByName) {
  ASSERT_TRUE(Relinked("/bin/true", T("shared/true")));  // root's, 0755, in a 0777 folder
  ASSERT_TRUE(Relinked("/bin/true", T("sys/group-writable-true")));
  ASSERT_EQ(chmod(T("sys/group-writable-true").c_str(), 0775), 0);
  // Root's folders: inside the agent's own, and inside a shared one. Their programs' names are
  // root's choice; the agent may move the folder, never change what is in it.
  ASSERT_EQ(mkdir(T("home/bin").c_str(), 0755), 0);
  ASSERT_TRUE(Relinked("/bin/true", T("home/bin/true")));
  ASSERT_EQ(mkdir(T("shared/x").c_str(), 0755), 0);
  ASSERT_TRUE(Relinked("/bin/true", T("shared/x/true")));
  Start({"true", "group-writable-true"});
  EXPECT_EQ(Exec({T("shared/true")}), kEperm);
  EXPECT_EQ(Exec({T("sys/group-writable-true")}), kEperm);
  EXPECT_EQ(Exec({T("sys/true")}), "");
  EXPECT_EQ(Exec({T("home/bin/true")}), "");
  EXPECT_EQ(Exec({T("shared/x/true")}), "");
  // An absolute entry matches as written, wherever the program is.
  Start({T("shared/true")});
  EXPECT_EQ(Exec({T("shared/true")}), "");
}

TEST_F(ExecRulesTest, ANameEntryMatchesTheTargetOfASameNamedLinkLeashdResolved) {
  Start({"python3"}, {{"python3", T("sys/python3.11")}});
  EXPECT_EQ(Exec({T("sys/python3.11")}), "");
  EXPECT_EQ(Exec({T("sys/python3.12")}), kEperm);
  const std::vector<std::string> lines = CommandLines(Log(), T("sys/python3.11"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("matches allow entry 'python3'"));
}

TEST_F(ExecRulesTest, AScriptsInterpreterIsACommandOfItsOwn) {
  ASSERT_TRUE(WriteFile(T("sys/hello.sh"), absl::StrCat("#!", T("sys/true"), "\n"), 0755).ok());
  ASSERT_TRUE(WriteFile(T("sys/cat.sh"), absl::StrCat("#!", T("sys/cat"), "\n"), 0755).ok());
  ASSERT_EQ(chmod(T("sys/hello.sh").c_str(), 0755), 0);
  ASSERT_EQ(chmod(T("sys/cat.sh").c_str(), 0755), 0);
  Start({"hello.sh", "cat.sh", "true"});
  // The script, its interpreter (allowed by its own entry) and that interpreter's loader.
  EXPECT_EQ(Exec({T("sys/hello.sh")}), "");
  // An allowed script does not lend its permission to the interpreter it names.
  EXPECT_EQ(Exec({T("sys/cat.sh")}), kEperm);
  const std::string log = Log();
  const std::vector<std::string> cat = CommandLines(log, T("sys/cat"));
  ASSERT_EQ(cat.size(), 1u) << log;
  EXPECT_THAT(cat[0], HasSubstr("not in allow list"));
  const std::vector<std::string> loader = CommandLines(log, T("sys/ld.so"));
  ASSERT_EQ(loader.size(), 1u) << log;
  EXPECT_THAT(loader[0], HasSubstr(absl::StrCat("ELF interpreter of ", T("sys/true"))));
}

// The interpreter is allowed with its program only when it is the very file PT_INTERP names
// from the host's root. In a user namespace of its own the agent may chroot into a folder it
// owns, where the loader path an allowed program names is its own file (here an identical copy
// of the loader): the kernel loads that file, which must be judged as a command of its own.
TEST_F(ExecRulesTest, AnInterpreterIsTheHostsFileOrACommandOfItsOwn) {
  ASSERT_EQ(access(kSystemInterp, R_OK), 0) << "this test needs " << kSystemInterp;
  ASSERT_TRUE(WriteFile(T("sys/readable"), "data\n").ok());
  // The agent's folder. Only /usr/bin in it is root's, holding root's unmodified copy of cat
  // (the name entry `cat` matches it: root's program in root's folder).
  const std::string jail = T("home/jail");
  auto J = [&jail](absl::string_view rel) { return absl::StrCat(jail, rel); };
  for (const char* dir : {"", "/usr", "/lib64", "/usr/bin"}) {
    ASSERT_EQ(mkdir(J(dir).c_str(), 0755), 0) << dir;
    if (absl::string_view(dir) != "/usr/bin") {
      ASSERT_EQ(chown(J(dir).c_str(), g_agent->uid(), g_agent->gid()), 0) << dir;
    }
  }
  ASSERT_TRUE(RunOk({"cp", "/usr/bin/cat", J("/usr/bin/cat")}).ok());
  // The agent's own files: the loader at the path cat's PT_INTERP names, and the libraries.
  ASSERT_TRUE(
      RunOk(g_agent->AsUser({"cp", "-L", kSystemInterp, J("/lib64/ld-linux-x86-64.so.2")})).ok());
  absl::StatusOr<std::string> libraries = RunOk({"ldd", "/usr/bin/cat"});
  ASSERT_TRUE(libraries.ok()) << libraries.status();
  for (absl::string_view line : absl::StrSplit(*libraries, '\n', absl::SkipEmpty())) {
    const size_t arrow = line.find("=> /");
    if (arrow == absl::string_view::npos) continue;
    absl::string_view library = line.substr(arrow + 3);
    library = library.substr(0, library.find(' '));
    ASSERT_TRUE(
        RunOk(g_agent->AsUser({"cp", "-L", "--parents", std::string(library), jail})).ok())
        << library;
  }
  ASSERT_TRUE(
      RunOk(g_agent->AsUser({"sh", "-c", absl::StrCat("echo jailed > ", J("/note"))})).ok());
  Start({"cat"});

  // In a user namespace of its own, chroot into its folder, run the allowed cat.
  absl::StatusOr<RunResult> jailed = leash::testing::Run(
      g_agent->AsUser({"unshare", "--user", "--map-root-user", "chroot", jail, "/usr/bin/cat",
                       "/note"}),
      absl::Seconds(20));
  ASSERT_TRUE(jailed.ok()) << jailed.status();
  EXPECT_THAT(jailed->out, HasSubstr("Operation not permitted"));
  EXPECT_THAT(jailed->out, Not(HasSubstr("jailed")));
  // The host's loader (here the tmpfs copy PT_INTERP names through root's link) for an
  // allowed program is still part of its exec.
  EXPECT_EQ(Exec({T("sys/cat"), T("sys/readable")}), "data");

  const std::string log = Log();
  const std::vector<std::string> program = CommandLines(log, J("/usr/bin/cat"));
  ASSERT_EQ(program.size(), 1u) << log;
  EXPECT_THAT(program[0], HasSubstr("\"action\":\"allow\""));
  const std::vector<std::string> agents = CommandLines(log, J("/lib64/ld-linux-x86-64.so.2"));
  ASSERT_EQ(agents.size(), 1u) << log;
  EXPECT_THAT(agents[0], HasSubstr("\"action\":\"block\""));
  EXPECT_THAT(agents[0], Not(HasSubstr("is the ELF interpreter of")));
  EXPECT_THAT(agents[0], HasSubstr("not in allow list"));
  const std::vector<std::string> hosts = CommandLines(log, T("sys/ld.so"));
  ASSERT_EQ(hosts.size(), 1u) << log;
  EXPECT_THAT(hosts[0], HasSubstr("\"action\":\"allow\""));
  EXPECT_THAT(hosts[0], HasSubstr(absl::StrCat("is the ELF interpreter of ", T("sys/cat"))));
}

// A program root installed may name, from the host's root, a loader the agent owns (here
// through root's own link): the very file PT_INTERP names, but one the agent could have made
// or changed, so it passes no more than the name rule would let it: a command of its own.
TEST_F(ExecRulesTest, AnInterpreterTheAgentCouldHaveMadeIsACommandOfItsOwn) {
  ASSERT_TRUE(WriteFile(T("sys/readable"), "data\n").ok());
  ASSERT_TRUE(RunOk(g_agent->AsUser({"cp", T("sys/ld.so"), T("home/ld.so")})).ok());
  ASSERT_EQ(symlink(T("home/ld.so").c_str(), AgentInterp().c_str()), 0);
  ASSERT_EQ(mkdir(T("sys/other").c_str(), 0755), 0);
  ASSERT_TRUE(Relinked("/bin/cat", T("sys/other/cat"), AgentInterp()));
  Start({"cat"});
  EXPECT_EQ(Exec({T("sys/other/cat"), T("sys/readable")}), kEperm);
  EXPECT_EQ(Exec({T("sys/cat"), T("sys/readable")}), "data");
  const std::string log = Log();
  const std::vector<std::string> agents = CommandLines(log, T("home/ld.so"));
  ASSERT_EQ(agents.size(), 1u) << log;
  EXPECT_THAT(agents[0], HasSubstr("\"action\":\"block\""));
  EXPECT_THAT(agents[0], Not(HasSubstr("is the ELF interpreter of")));
}

}  // namespace
}  // namespace leash::testing
