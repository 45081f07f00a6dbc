// An agent under a whitelist `filesystem: allow: [@system, <its workdir>]` can run cat, ls,
// bash -c, python3 -c and git init/add/commit/log in its workdir, and cannot read /etc/shadow
// or list a denied folder. Real leash-fswatch, a real test account, real programs.
//
// A test marks only a tmpfs of its own, never / (a stalled watcher on / freezes the host), so
// the system the agent runs is a copy of this host's (make_system_root.sh: the same binaries,
// libraries, python standard library and git-core) on a tmpfs under the test's mount, entered
// with chroot. Its programs' PT_INTERP names a link that leads to the copy's loader from the
// host's root too (the watcher resolves it there), as /lib64/ld-linux-x86-64.so.2 leads to the
// loader of a host whose root filesystem is marked. The kernel reports those files under that
// folder, so the shipped @system list is handed to the engine with each entry under it;
// everything else (the list's entries, their expansion, the judging of every open and
// listing) is what an installed host does. The commands surface is a blacklist here: this test
// is about what the filesystem allows, except in the last test, which runs the README's
// quick-start policy (docs/examples/leash.yaml) whole.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/config_yaml.h"
#include "engine/named_lists.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/host/command_links.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/test_account.h"
#include "test/fixtures/tmpfs.h"
#include "test/fswatch/harness.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kShippedSystemList[] = "packaging/lists/system";
constexpr char kExamplePolicy[] = "docs/examples/leash.yaml";
constexpr char kMakeSystemRoot[] = "test/fswatch/make_system_root.sh";
constexpr char kEpermText[] = "Operation not permitted";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The account and the copied system, made once for the tests of this binary (copying takes
// a minute); each test starts its own watcher.
struct World {
  std::unique_ptr<TestAccount> account;
  std::unique_ptr<TmpfsMount> tmpfs;
  std::string root;
  bool mounted = false;
  // The copied programs' PT_INTERP: a link in a root-only folder on the host's /tmp to the
  // copy's loader (the watcher resolves PT_INTERP from the host's root); inside the copy the
  // same path is a link to its loader by its own name.
  std::string interp_dir;
  std::string Interp() const { return interp_dir + "/ld"; }
  std::string problem;  // why the world could not be made
  ~World() {
    if (!interp_dir.empty()) {
      unlink(Interp().c_str());
      rmdir(interp_dir.c_str());
    }
    if (mounted) umount2(root.c_str(), MNT_DETACH);
  }
};
World* g_world = nullptr;

std::string MakeWorld(World& w) {
  absl::StatusOr<std::unique_ptr<TestAccount>> account =
      TestAccount::Create(absl::StrCat("lsys", getpid()));
  if (!account.ok()) return std::string(account.status().message());
  w.account = *std::move(account);
  absl::StatusOr<std::unique_ptr<TmpfsMount>> tmpfs = TmpfsMount::Create();
  if (!tmpfs.ok()) return std::string(tmpfs.status().message());
  w.tmpfs = *std::move(tmpfs);
  // The test tmpfs is small and nodev; the copied system needs room and /dev/null.
  w.root = w.tmpfs->path() + "/root";
  if (mkdir(w.root.c_str(), 0755) != 0) return absl::StrCat("mkdir ", w.root, ": ", strerror(errno));
  if (mount("leash-test-system", w.root.c_str(), "tmpfs", MS_NOSUID, "mode=0755,size=1g") != 0) {
    return absl::StrCat("mount ", w.root, ": ", strerror(errno));
  }
  w.mounted = true;
  const std::string interp_dir = absl::StrCat("/tmp/ls", getpid());
  if (mkdir(interp_dir.c_str(), 0755) != 0) {
    return absl::StrCat("mkdir ", interp_dir, ": ", strerror(errno));
  }
  w.interp_dir = interp_dir;
  // After the account exists, so the copied passwd names it.
  absl::StatusOr<RunResult> made =
      leash::testing::Run({"bash", kMakeSystemRoot, w.root, w.Interp()}, absl::Minutes(5));
  if (!made.ok()) return std::string(made.status().message());
  if (made->exit_code != 0) return absl::StrCat(kMakeSystemRoot, " failed: ", made->out);
  auto r = [&w](absl::string_view path) { return absl::StrCat(w.root, path); };
  // The copy's loader: what the link in the copy names, inside the copy.
  char in_copy[PATH_MAX];
  const ssize_t in_copy_len = readlink(r(w.Interp()).c_str(), in_copy, sizeof(in_copy) - 1);
  if (in_copy_len <= 0) return absl::StrCat("readlink ", r(w.Interp()), ": ", strerror(errno));
  in_copy[in_copy_len] = '\0';
  char copied_loader[PATH_MAX];
  if (realpath(r(in_copy).c_str(), copied_loader) == nullptr ||
      !absl::StartsWith(copied_loader, w.root + "/")) {
    return absl::StrCat("the copy's loader ", r(in_copy), " is not a file in the copy");
  }
  if (symlink(copied_loader, w.Interp().c_str()) != 0) {
    return absl::StrCat("symlink ", w.Interp(), ": ", strerror(errno));
  }
  // Files @system never names, readable by mode so that only the policy refuses them.
  if (!WriteFile(r("/etc/shadow"), "root:$6$not-a-real-hash:19000::::::\n", 0644).ok() ||
      mkdir(r("/etc/ssh").c_str(), 0755) != 0 ||
      !WriteFile(r("/etc/ssh/ssh_host_ed25519_key"), "key\n", 0644).ok()) {
    return "could not write /etc/shadow and /etc/ssh in the copy";
  }
  for (const char* dir : {"/home/agent", "/home/agent/work", "/home/agent/work/denied",
                          "/home/fido", "/home/fido/work", "/tmp/fido"}) {
    if (mkdir(r(dir).c_str(), 0755) != 0 ||
        chown(r(dir).c_str(), w.account->uid(), w.account->gid()) != 0) {
      return absl::StrCat("could not make ", dir);
    }
  }
  if (!WriteFile(r("/home/agent/work/denied/notes"), "private\n", 0644).ok() ||
      !WriteFile(r("/home/fido/work/.env"), "API_KEY=not-a-real-key\n", 0644).ok()) {
    return "could not write the denied files";
  }
  return "";
}

class SystemListRootTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;  // each test fails in SetUp with the reason
    g_world = new World;
    g_world->problem = MakeWorld(*g_world);
  }
  static void TearDownTestSuite() {
    delete g_world;
    g_world = nullptr;
  }

  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    ASSERT_NE(g_world, nullptr);
    ASSERT_EQ(g_world->problem, "");
    const TestAccount& account = *g_world->account;
    // A fresh workdir for each test.
    RunOk({"bash", "-c", absl::StrCat("find ", R("/home/agent/work"),
                                      " -mindepth 1 -maxdepth 1 ! -name denied -exec rm -rf {} +")})
        .status()
        .IgnoreError();

    // `filesystem: { mode: whitelist, allow: [@system, <workdir>], deny: [<workdir>/denied] }`,
    // expanded by the engine from the shipped list (each entry under the copied root).
    leash::v1::Config config;
    config.mutable_filesystem()->set_mode(leash::v1::MODE_WHITELIST);
    config.mutable_filesystem()->mutable_allow()->add_entries("@system");
    config.mutable_filesystem()->mutable_allow()->add_entries(R("/home/agent/work"));
    absl::StatusOr<std::vector<engine::ListLine>> shipped =
        engine::ParseListText(ReadAll(kShippedSystemList));
    ASSERT_TRUE(shipped.ok()) << shipped.status();
    ASSERT_GT(shipped->size(), 10u);
    std::string rooted;
    for (const engine::ListLine& line : *shipped) absl::StrAppend(&rooted, R(line.entry), "\n");
    engine::ListTexts texts;
    texts["/etc/leash/lists/system"] = rooted;
    absl::StatusOr<leash::v1::Config> expanded = engine::ExpandLists(config, texts);
    ASSERT_TRUE(expanded.ok()) << expanded.status();
    const auto& allow = expanded->filesystem().allow().entries();

    StartWatcherOn(Subject(account.uid(), account.name(), leash::v1::MODE_WHITELIST,
                           {allow.begin(), allow.end()}, {R("/home/agent/work/denied")},
                           leash::v1::MODE_BLACKLIST, {}, {"curl"}));
  }

  // Stops the running watcher, if any, and starts one whose map holds `subject` alone.
  void StartWatcherOn(const leash::v1::SubjectPolicy& subject) {
    StopWatcher();
    leash::v1::PolicyUpdate map;
    map.set_version(1);
    map.set_full(true);
    *map.add_subjects() = subject;
    WatcherStart start;
    start.map = map;
    start.tmpfs = g_world->tmpfs->path();
    start.work_dir = getenv("TEST_TMPDIR");
    static int started = 0;  // unique file names across the tests of this binary
    start.name = absl::StrCat("watcher", ++started);
    absl::StatusOr<WatcherProcess> watcher = StartWatcher(start);
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = std::make_unique<WatcherProcess>(*std::move(watcher));
  }

  void TearDown() override { StopWatcher(); }

  void StopWatcher() {
    if (watcher_ && watcher_->process && watcher_->process->Running()) {
      watcher_->process->Signal(SIGTERM);
      watcher_->process->Wait(absl::Seconds(10)).IgnoreError();
    }
    watcher_.reset();
  }

  static std::string R(absl::string_view path) { return absl::StrCat(g_world->root, path); }

  // `script` run by bash as the agent, in the copied system, in `workdir`. The environment is
  // set by root before chroot, so bash is the agent's first exec.
  RunResult AsAgent(const std::string& script, const std::string& workdir = "/home/agent/work") {
    const TestAccount& account = *g_world->account;
    absl::StatusOr<RunResult> result = leash::testing::Run(
        {"env", "-i", absl::StrCat("HOME=", workdir), "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
         "/usr/sbin/chroot", absl::StrCat("--userspec=", account.uid(), ":", account.gid()),
         g_world->root, "/usr/bin/bash", "-c", absl::StrCat("cd ", workdir, " && ", script)},
        absl::Minutes(2));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : RunResult{};
  }

  std::unique_ptr<WatcherProcess> watcher_;
};

TEST_F(SystemListRootTest, AnAgentUnderSystemAndItsWorkdirRunsCatLsBashPythonAndGit) {
  RunResult r = AsAgent("cat /etc/hosts >/dev/null && echo cat-ok");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("cat-ok"));

  r = AsAgent("echo x > f && ls -la . && ls / && ls /etc >/dev/null && ls /home/agent");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("usr"));

  r = AsAgent("bash -c 'echo from-bash'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("from-bash"));

  r = AsAgent(
      "python3 -c 'import json, ssl, subprocess, os; print(json.dumps(sorted(os.listdir("
      "\".\"))[:1]))' && printf 'print(6*7)\\n' > script.py && python3 script.py");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("42"));

  r = AsAgent(
      "git init -q repo && cd repo && echo hello > README && git add README && "
      "git -c user.email=agent@example.invalid -c user.name=agent commit -q -m first-commit && "
      "git log --oneline && git status --short");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("first-commit"));
  EXPECT_THAT(r.out, Not(HasSubstr(kEpermText)));
}

TEST_F(SystemListRootTest, AnAgentUnderSystemCannotReadShadowOrListADeniedFolder) {
  RunResult r = AsAgent("cat /etc/shadow");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  EXPECT_THAT(r.out, Not(HasSubstr("not-a-real-hash")));

  // /etc/ssh is in no entry: neither listed nor read. /etc itself lists (a way to /etc/hosts).
  r = AsAgent("ls /etc/ssh");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  EXPECT_THAT(r.out, Not(HasSubstr("ssh_host")));
  r = AsAgent("cat /etc/ssh/ssh_host_ed25519_key");
  EXPECT_THAT(r.out, HasSubstr(kEpermText));

  // A deny entry inside the workdir: the folder cannot be listed, from ls or from python.
  r = AsAgent("ls denied");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  EXPECT_THAT(r.out, Not(HasSubstr("notes")));
  r = AsAgent("python3 -c 'import os; os.listdir(\"denied\")'");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("PermissionError: [Errno 1]"));

  ASSERT_NE(watcher_, nullptr);
  watcher_->process->Signal(SIGTERM);
  watcher_->process->Wait(absl::Seconds(10)).IgnoreError();
  const std::string log = watcher_->Log();
  EXPECT_THAT(log, HasSubstr(absl::StrCat("\"path\":\"", R("/etc/shadow"), "\"")));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("matches deny entry '", R("/home/agent/work/denied"))));
}

// The example policy as the README hands it to an operator, run whole by the watcher: its
// paths are placed under the copied system (the kernel reports them there), its lists are the
// shipped ones, and `python3` names the copy's python3.11 through leashd's own link resolution.
// The agent's work runs; curl, a copy of curl named git, the loader run directly and a read of
// the denied .env fail with EPERM.
TEST_F(SystemListRootTest, TheExamplePolicyLetsAnAgentWorkAndRefusesCurlACopyTheLoaderAndDenies) {
  absl::StatusOr<leash::v1::Config> example =
      engine::ParseConfigYaml(ReadAll(kExamplePolicy), engine::ConfigKind::kFloor, kExamplePolicy);
  ASSERT_TRUE(example.ok()) << example.status();
  auto rooted = [](leash::v1::EntryList* list) {
    for (std::string& entry : *list->mutable_entries()) {
      if (absl::StartsWith(entry, "/")) entry = R(entry);
    }
  };
  rooted(example->mutable_filesystem()->mutable_allow());
  rooted(example->mutable_filesystem()->mutable_deny());
  rooted(example->mutable_commands()->mutable_allow());
  rooted(example->mutable_commands()->mutable_deny());
  engine::ListTexts texts;
  for (const std::string& file : engine::ListFilesUsed(*example)) {
    const std::string shipped = absl::StrCat("packaging/lists/", file.substr(file.rfind('/') + 1));
    std::string text = ReadAll(shipped);
    ASSERT_FALSE(text.empty()) << "no shipped list " << shipped;
    if (absl::EndsWith(file, "/system")) {
      absl::StatusOr<std::vector<engine::ListLine>> lines = engine::ParseListText(text);
      ASSERT_TRUE(lines.ok()) << lines.status();
      text.clear();
      for (const engine::ListLine& line : *lines) absl::StrAppend(&text, R(line.entry), "\n");
    }
    texts[file] = text;
  }
  absl::StatusOr<leash::v1::Config> expanded = engine::ExpandLists(*example, texts);
  ASSERT_TRUE(expanded.ok()) << expanded.status();

  const TestAccount& account = *g_world->account;
  leash::v1::SubjectPolicy subject;
  subject.set_uid(account.uid());
  subject.set_account(account.name());
  *subject.mutable_policy() = *expanded;
  // The links leashd resolves on every reconcile, found the way it finds them: its system
  // PATH, here under the copied root (`python3` -> the copy's python3.11).
  std::vector<std::string> path;
  for (const std::string& folder : host::SystemCommandPath()) path.push_back(R(folder));
  bool python3_linked = false;
  for (const engine::CommandLink& link : host::ResolveCommandLinks(*expanded, path)) {
    leash::v1::CommandLink* wire = subject.add_command_links();
    wire->set_name(link.name);
    wire->set_target(link.target);
    python3_linked |= link.name == "python3";
  }
  ASSERT_TRUE(python3_linked) << "leashd's link resolution found no python3 link in the copy";
  StartWatcherOn(subject);

  const std::string work = "/home/fido/work";
  RunResult r = AsAgent(
      "git init -q repo && cd repo && echo hello > README && git add README && "
      "git -c user.email=agent@example.invalid -c user.name=agent commit -q -m first-commit && "
      "git log --oneline",
      work);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("first-commit"));
  r = AsAgent("printf 'print(6*7)\\n' > script.py && python3 script.py", work);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("42"));
  r = AsAgent("pip --version", work);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("pip "));
  r = AsAgent("ls -la . && echo note > n.txt && cat n.txt && bash -c 'echo from-bash'", work);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("from-bash"));
  EXPECT_THAT(r.out, Not(HasSubstr(kEpermText)));

  r = AsAgent("curl --version", work);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  // The agent's own copy of curl, named like an allowed program.
  r = AsAgent("python3 -c 'import shutil; shutil.copy(\"/usr/bin/curl\", \"git\")' && ./git --version",
              work);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  EXPECT_THAT(r.out, Not(HasSubstr("libcurl")));
  r = AsAgent("/lib64/ld-linux-x86-64.so.2 /usr/bin/curl --version", work);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  EXPECT_THAT(r.out, Not(HasSubstr("libcurl")));
  r = AsAgent("cat .env", work);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(kEpermText));
  EXPECT_THAT(r.out, Not(HasSubstr("not-a-real-key")));
}

}  // namespace
}  // namespace leash::testing
