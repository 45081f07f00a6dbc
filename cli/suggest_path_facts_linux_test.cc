// The real file-system facts, as root, on a tmpfs mounted for the test with a real test
// account: a program the account can replace (its own folder, a folder others may write, a
// sticky folder with its file, an ACL granting it write, a link either way) is never a command
// suggest proposes, and the account really can replace it; the host's own loader is found
// under each of its names; a root-owned program in a root-owned chain passes.
#include "cli/suggest_path_facts_linux.h"

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/suggest_path_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/account_view.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/test_account.h"
#include "test/fixtures/tmpfs.h"

namespace leash::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class LinuxPathFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    absl::StatusOr<std::unique_ptr<leash::testing::TmpfsMount>> fs =
        leash::testing::TmpfsMount::Create();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = std::move(*fs);
    absl::StatusOr<std::unique_ptr<leash::testing::TestAccount>> account =
        leash::testing::TestAccount::Create(leash::testing::UniqueAccountName("lpf"));
    ASSERT_TRUE(account.ok()) << account.status();
    account_ = std::move(*account);
  }

  std::string At(const std::string& name) const { return absl::StrCat(fs_->path(), "/", name); }

  void Folder(const std::string& name, uid_t uid, mode_t mode) {
    ASSERT_EQ(mkdir(At(name).c_str(), 0755), 0) << name << ": " << strerror(errno);
    ASSERT_EQ(chown(At(name).c_str(), uid, uid), 0) << strerror(errno);
    ASSERT_EQ(chmod(At(name).c_str(), mode), 0) << strerror(errno);
  }
  void Program(const std::string& name, uid_t uid, mode_t mode = 0755) {
    ASSERT_TRUE(leash::testing::RunOk({"cp", "/bin/true", At(name)}).ok());
    ASSERT_EQ(chown(At(name).c_str(), uid, uid), 0) << strerror(errno);
    ASSERT_EQ(chmod(At(name).c_str(), mode), 0) << strerror(errno);
  }
  // Whether the test account can put a file of its own at `name`.
  bool AccountCanReplace(const std::string& name) {
    absl::StatusOr<leash::testing::RunResult> run = leash::testing::Run(account_->AsUser(
        {"/bin/sh", "-c",
         absl::StrCat("rm -f '", At(name), "' && cp /bin/false '", At(name), "'")}));
    return run.ok() && run->exit_code == 0;
  }
  std::string Why(const std::string& path) {
    return ProgramCheck(facts_, {}, {}).WhyNotSuggested(path);
  }

  LinuxPathFacts facts_;
  std::unique_ptr<leash::testing::TmpfsMount> fs_;
  std::unique_ptr<leash::testing::TestAccount> account_;
};

TEST_F(LinuxPathFactsTest, SuggestNeverProposesAProgramTheAccountCanReplace) {
  const uid_t agent = account_->uid();
  Folder("root", 0, 0755);
  Program("root/tool", 0);
  Folder("own", agent, 0755);
  Program("own/tool", 0);
  Folder("open", 0, 0777);
  Program("open/tool", 0);
  Folder("sticky", 0, 01777);
  Program("sticky/root-tool", 0);
  Program("sticky/agent-tool", agent);
  Program("root/group-writable", 0, 0775);
  ASSERT_EQ(symlink(At("own/tool").c_str(), At("root/link-out").c_str()), 0);
  ASSERT_EQ(symlink("/bin/true", At("own/link-in").c_str()), 0);

  // The tmpfs lies in /tmp (sticky, root's) and is root's: root's program there passes.
  EXPECT_THAT(Why(At("root/tool")), IsEmpty());
  EXPECT_THAT(Why(At("sticky/root-tool")), IsEmpty());
  EXPECT_THAT(Why("/usr/bin/true"), IsEmpty());

  struct Case {
    std::string name;
    std::string why;
    std::string replaced;  // what the account replaces to change what `name` runs
  };
  for (const Case& c : std::vector<Case>{
           {"own/tool", absl::StrCat("the folder ", At("own"), " is owned by uid ", agent),
            "own/tool"},
           {"open/tool", absl::StrCat("the folder ", At("open"), " (mode 0777)"), "open/tool"},
           {"sticky/agent-tool",
            absl::StrCat(At("sticky/agent-tool"), " in it is owned by uid ", agent),
            "sticky/agent-tool"},
           {"root/link-out", absl::StrCat("the folder ", At("own"), " is owned by uid ", agent),
            "own/tool"},
           {"own/link-in", absl::StrCat("the folder ", At("own"), " is owned by uid ", agent),
            "own/link-in"},
       }) {
    EXPECT_THAT(Why(At(c.name)), HasSubstr(c.why)) << c.name;
    // The reason is real: the account puts its own file there.
    EXPECT_TRUE(AccountCanReplace(c.replaced)) << c.name;
  }
  EXPECT_THAT(Why(At("root/group-writable")), HasSubstr("(mode 0775) is writable by its group"));
  EXPECT_FALSE(AccountCanReplace("root/tool"));
  EXPECT_FALSE(AccountCanReplace("sticky/root-tool"));
}

TEST_F(LinuxPathFactsTest, AnAclGrantingTheAccountWriteIsSeen) {
  Folder("acl", 0, 0755);
  Program("acl/tool", 0);
  EXPECT_THAT(Why(At("acl/tool")), IsEmpty());
  // user::rwx, user:<agent>:rwx, group::r-x, mask::rwx, other::r-x (linux/posix_acl_xattr.h).
  struct Entry {
    uint16_t tag, perm;
    uint32_t id;
  };
  const uint32_t version = 2;
  const Entry entries[] = {{0x01, 7, 0xFFFFFFFF},
                           {0x02, 7, account_->uid()},
                           {0x04, 5, 0xFFFFFFFF},
                           {0x10, 7, 0xFFFFFFFF},
                           {0x20, 5, 0xFFFFFFFF}};
  std::string value(reinterpret_cast<const char*>(&version), 4);
  value.append(reinterpret_cast<const char*>(entries), sizeof(entries));
  ASSERT_EQ(setxattr(At("acl").c_str(), "system.posix_acl_access", value.data(), value.size(), 0),
            0)
      << strerror(errno);
  absl::StatusOr<NodeFacts> node = facts_.Lstat(At("acl"));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_TRUE(node->acl_grants_write);
  EXPECT_THAT(Why(At("acl/tool")), HasSubstr("(mode 0775) has an ACL granting write"));
  EXPECT_TRUE(AccountCanReplace("acl/tool"));
}

TEST_F(LinuxPathFactsTest, SuggestNeverProposesTheHostsLoader) {
  absl::StatusOr<std::string> interpreter = facts_.ElfInterpreter("/bin/true");
  ASSERT_TRUE(interpreter.ok()) << interpreter.status();
  ASSERT_THAT(*interpreter, HasSubstr("ld-"));
  absl::StatusOr<std::string> real = leash::testing::RunOk({"readlink", "-f", *interpreter});
  ASSERT_TRUE(real.ok()) << real.status();
  std::string resolved = *real;
  while (!resolved.empty() && resolved.back() == '\n') resolved.pop_back();
  const ProgramCheck check(facts_, {}, {"/proc/self/exe"}, {"/usr/bin"});
  for (const std::string& loader : {*interpreter, resolved}) {
    EXPECT_THAT(check.WhyNotSuggested(loader), HasSubstr("the ELF loader")) << loader;
  }
  // Under a name that does not look like one: a link root made to it.
  Folder("bin", 0, 0755);
  ASSERT_EQ(symlink(resolved.c_str(), At("bin/runner").c_str()), 0);
  EXPECT_THAT(check.WhyNotSuggested(At("bin/runner")), HasSubstr("the ELF loader"));
  EXPECT_THAT(check.WhyNotSuggested("/proc/self/exe"), HasSubstr("procfs"));
  EXPECT_THAT(check.WhyNotSuggested("/usr/bin/true"), IsEmpty());
}

}  // namespace
}  // namespace leash::cli
