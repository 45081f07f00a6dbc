// An agent under a whitelist `filesystem: allow: [@system, <its workdir>]` can run cat, ls,
// bash -c, python3 -c and git init/add/commit/log in its workdir, and cannot read /etc/shadow
// or list a denied folder. Real leash-fswatch, a real test account, real programs.
//
// A test marks only a tmpfs of its own, never / (a stalled watcher on / freezes the host), so
// the system the agent runs is a copy of this host's (make_system_root.sh: the same binaries,
// libraries, python standard library and git-core) on a tmpfs under the test's mount, entered
// with chroot. The kernel reports those files under that folder, so the shipped @system list is
// handed to the engine with each entry under it; everything else (the list's entries, their
// expansion, the judging of every open and listing) is what an installed host does. The
// commands surface is a blacklist here: this test is about what the filesystem allows.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/named_lists.h"
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

constexpr char kShippedSystemList[] = "packaging/lists/system";
constexpr char kMakeSystemRoot[] = "test/fswatch/make_system_root.sh";
constexpr char kEpermText[] = "Operation not permitted";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class SystemListRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    absl::StatusOr<std::unique_ptr<TestAccount>> account =
        TestAccount::Create(absl::StrCat("lsys", getpid()));
    ASSERT_TRUE(account.ok()) << account.status();
    account_ = *std::move(account);
    absl::StatusOr<std::unique_ptr<TmpfsMount>> tmpfs = TmpfsMount::Create();
    ASSERT_TRUE(tmpfs.ok()) << tmpfs.status();
    tmpfs_ = *std::move(tmpfs);
    // The test tmpfs is small and nodev; the copied system needs room and /dev/null.
    root_ = tmpfs_->path() + "/root";
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
    ASSERT_EQ(mount("leash-test-system", root_.c_str(), "tmpfs", MS_NOSUID, "mode=0755,size=1g"),
              0)
        << strerror(errno);
    mounted_ = true;
    // After the account exists, so the copied passwd names it.
    absl::StatusOr<RunResult> made = leash::testing::Run({"bash", kMakeSystemRoot, root_}, absl::Minutes(5));
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_EQ(made->exit_code, 0) << made->out;
    // Files @system never names, readable by mode so that only the policy refuses them.
    ASSERT_TRUE(WriteFile(R("/etc/shadow"), "root:$6$not-a-real-hash:19000::::::\n", 0644).ok());
    ASSERT_EQ(mkdir(R("/etc/ssh").c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(R("/etc/ssh/ssh_host_ed25519_key"), "key\n", 0644).ok());
    for (const char* dir : {"/home/agent", "/home/agent/work", "/home/agent/work/denied"}) {
      ASSERT_EQ(mkdir(R(dir).c_str(), 0755), 0) << dir;
      ASSERT_EQ(chown(R(dir).c_str(), account_->uid(), account_->gid()), 0) << dir;
    }
    ASSERT_TRUE(WriteFile(R("/home/agent/work/denied/notes"), "private\n", 0644).ok());

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

    leash::v1::PolicyUpdate map;
    map.set_version(1);
    map.set_full(true);
    *map.add_subjects() = Subject(account_->uid(), account_->name(), leash::v1::MODE_WHITELIST,
                                  {allow.begin(), allow.end()}, {R("/home/agent/work/denied")},
                                  leash::v1::MODE_BLACKLIST, {}, {"curl"});
    WatcherStart start;
    start.map = map;
    start.tmpfs = tmpfs_->path();
    start.work_dir = getenv("TEST_TMPDIR");
    absl::StatusOr<WatcherProcess> watcher = StartWatcher(start);
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = std::make_unique<WatcherProcess>(*std::move(watcher));
  }

  void TearDown() override {
    if (watcher_ && watcher_->process && watcher_->process->Running()) {
      watcher_->process->Signal(SIGTERM);
      watcher_->process->Wait(absl::Seconds(10)).IgnoreError();
    }
    watcher_.reset();
    if (mounted_) umount2(root_.c_str(), MNT_DETACH);
  }

  std::string R(absl::string_view path) const { return absl::StrCat(root_, path); }

  // `script` run by bash as the agent, in the copied system, in its workdir.
  RunResult AsAgent(const std::string& script) {
    absl::StatusOr<RunResult> result = leash::testing::Run(
        {"chroot", absl::StrCat("--userspec=", account_->uid(), ":", account_->gid()), root_,
         "/usr/bin/env", "-i", "HOME=/home/agent/work", "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
         "/usr/bin/bash", "-c", absl::StrCat("cd /home/agent/work && ", script)},
        absl::Minutes(2));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : RunResult{};
  }

  std::unique_ptr<TestAccount> account_;
  std::unique_ptr<TmpfsMount> tmpfs_;
  std::string root_;
  bool mounted_ = false;
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

}  // namespace
}  // namespace leash::testing
