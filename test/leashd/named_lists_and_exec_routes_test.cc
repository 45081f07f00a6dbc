// Named lists and the exec routes the kernel never reports, with the real leashd, its real
// watcher and a real agent account reading real files on the watched tmpfs:
//
// - a floor whose filesystem whitelist is `["@work"]` is enforced from the list file in the
//   lists folder beside the config (/etc/leash/lists on an installed host); an edit of the list
//   is picked up by the next reconcile and said; a list that is missing, or that anyone but root
//   could change, fails the subject closed (denied everything), as a dangling profile does;
// - leashd reads the kernel's settings that close the routes to running a program unseen (an
//   executable memfd, user namespaces, FUSE) and says each, with the setting that closes it and
//   what that breaks, in its log at start, in `leash status` and in `leash validate`.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/leashd/leashd_fixture.h"

namespace leash::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAgent[] = "leash-lists";
constexpr char kEperm[] = "Operation not permitted";

class NamedListsAndExecRoutesTest : public RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    ASSERT_NE(MountTmpfs(), nullptr);
    ASSERT_NE(MakeAccountView(), nullptr);
    user_ = AddAccount(UniqueAccountName("lnu"));
    ASSERT_NE(user_, nullptr);
    agent_ = AddAccount(UniqueAccountName("lna"), kAgent);
    ASSERT_NE(agent_, nullptr);
    ASSERT_NE(MakeFiles("lnl-log"), nullptr);
    for (const char* dir : {"/a", "/b"}) {
      ASSERT_EQ(mkdir(Path(dir).c_str(), 0755), 0) << dir;
      std::ofstream(Path(dir) + "/x") << "in " << dir << "\n";
      chmod((Path(dir) + "/x").c_str(), 0644);
    }
  }

  void StartLeashd(const std::string& filesystem_allow) {
    const std::string floor = absl::StrCat(
        "user: ", user_->name(), "\nfail_mode: closed\n",
        "network: { mode: whitelist, allow: [\"floor.example\"], deny: [] }\n",
        "filesystem: { mode: whitelist, allow: [", filesystem_allow, "], deny: [] }\n",
        "commands: { mode: blacklist, allow: [], deny: [] }\n",
        "tools: { mode: whitelist, allow: [\"read_file\"], deny: [] }\n",
        "logging: { level: info, decisions: ", files_->Join("decisions.jsonl"), " }\n");
    auto leashd = LeashdInstance::Start(floor, *ns_, fs_->path(), {}, view_.get());
    ASSERT_TRUE(leashd.ok()) << leashd.status();
    leashd_ = *std::move(leashd);
  }

  std::string Path(const std::string& relative) const { return fs_->path() + relative; }

  // The lists folder leashd reads: beside its config, as /etc/leash/lists is beside
  // /etc/leash/leash.yaml.
  std::string Lists() const {
    const std::string config = leashd_->config_path();
    return config.substr(0, config.rfind('/')) + "/lists";
  }

  void WriteList(const std::string& name, const std::string& text) {
    mkdir(Lists().c_str(), 0755);
    // Renamed into place, as an editor or a package upgrade replaces a file.
    const std::string temp = Lists() + "/." + name + ".new";
    std::ofstream(temp) << text;
    ASSERT_EQ(chmod(temp.c_str(), 0644), 0);
    ASSERT_EQ(rename(temp.c_str(), (Lists() + "/" + name).c_str()), 0);
  }

  RunResult Leash(const std::vector<std::string>& args) {
    auto result = leashd_->Cli(args);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : RunResult();
  }

  // The agent reads `relative` on the watched tmpfs: true when it could, false on EPERM. It
  // runs in leashd's mount namespace (the account view's), as an agent on a host shares the
  // service's: an open through another namespace's copy of the mount is judged as such.
  bool Reads(const std::string& relative) {
    auto read = leash::testing::Run(leashd_->InItsMounts(agent_->AsUser({"cat", Path(relative)})));
    EXPECT_TRUE(read.ok()) << read.status();
    if (!read.ok()) return false;
    if (read->exit_code != 0) {
      EXPECT_THAT(read->out, HasSubstr(kEperm)) << relative;
    }
    return read->exit_code == 0;
  }

  std::string AgentState() {
    auto status = leashd_->Status();
    EXPECT_TRUE(status.ok()) << status.status();
    if (!status.ok()) return "";
    for (const leash::v1::SubjectStatus& subject : status->subjects()) {
      if (subject.account() == kAgent) return absl::StrCat(subject.state(), ": ", subject.detail());
    }
    return "absent";
  }

  const TestAccount* user_ = nullptr;
  const TestAccount* agent_ = nullptr;
  std::unique_ptr<LeashdInstance> leashd_;
};

TEST_F(NamedListsAndExecRoutesTest, AListIsEnforcedAndAnEditOfItIsPickedUpByTheNextReconcile) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd("\"@work\""));
  // No list file yet: the subject is denied everything, and said to be.
  EXPECT_THAT(AgentState(), HasSubstr("no-policy"));
  EXPECT_THAT(AgentState(), HasSubstr("/etc/leash/lists/work"));
  EXPECT_FALSE(Reads("/a/x"));

  WriteList("work", absl::StrCat("# the agent's data\n", Path("/a"), "\n"));
  RunResult reconciled = Leash({"reconcile"});
  EXPECT_EQ(reconciled.exit_code, 0) << reconciled.out << leashd_->Log();
  EXPECT_THAT(AgentState(), HasSubstr("enforced"));
  EXPECT_TRUE(Reads("/a/x")) << ReadAll(files_->Join("decisions.jsonl"));
  EXPECT_FALSE(Reads("/b/x"));

  // The operator edits the list and nothing else: the next reconcile enforces it and says how
  // the list changed (an edit widens every subject whose allow list uses it).
  WriteList("work", absl::StrCat(Path("/b"), "\n"));
  reconciled = Leash({"reconcile"});
  EXPECT_EQ(reconciled.exit_code, 0) << reconciled.out;
  EXPECT_FALSE(Reads("/a/x"));
  EXPECT_TRUE(Reads("/b/x"));
  EXPECT_THAT(leashd_->Log(), HasSubstr(absl::StrCat("list /etc/leash/lists/work was edited: "
                                                     "gained '",
                                                     Path("/b"), "'")));
  RunResult validate = Leash({"validate"});
  EXPECT_THAT(validate.out, HasSubstr("/etc/leash/lists/work"));
}

TEST_F(NamedListsAndExecRoutesTest, AListThatCannotBeTrustedOrReadFailsItsSubjectsClosed) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd("\"@work\""));
  WriteList("work", absl::StrCat(Path("/a"), "\n"));
  ASSERT_EQ(Leash({"reconcile"}).exit_code, 0);
  ASSERT_TRUE(Reads("/a/x"));

  // Anyone could widen it: not used, the subject denied everything, validate names the fix.
  ASSERT_EQ(chmod((Lists() + "/work").c_str(), 0666), 0);
  Leash({"reconcile"});
  EXPECT_THAT(AgentState(), HasSubstr("no-policy"));
  EXPECT_FALSE(Reads("/a/x"));
  RunResult validate = Leash({"validate"});
  EXPECT_EQ(validate.exit_code, 1) << validate.out;
  EXPECT_THAT(validate.out, HasSubstr("/etc/leash/lists/work"));
  EXPECT_THAT(validate.out, HasSubstr("chmod go-w"));
  RunResult status = Leash({"status"});
  EXPECT_EQ(status.exit_code, 4) << status.out;
  EXPECT_THAT(status.out, HasSubstr("DEGRADED: "));
  EXPECT_THAT(status.out, HasSubstr(absl::StrCat(kAgent, " is no-policy (unusable-list")));

  // A link in its place is not followed, and a missing list is no list.
  ASSERT_EQ(unlink((Lists() + "/work").c_str()), 0);
  const std::string elsewhere = files_->Join("work");
  std::ofstream(elsewhere) << Path("/a") << "\n";
  ASSERT_EQ(symlink(elsewhere.c_str(), (Lists() + "/work").c_str()), 0);
  Leash({"reconcile"});
  EXPECT_THAT(AgentState(), HasSubstr("no-policy"));
  EXPECT_FALSE(Reads("/a/x"));
  ASSERT_EQ(unlink((Lists() + "/work").c_str()), 0);
  Leash({"reconcile"});
  EXPECT_THAT(AgentState(), HasSubstr("no-policy"));
  EXPECT_FALSE(Reads("/a/x"));

  // Restored, it is used again.
  WriteList("work", absl::StrCat(Path("/a"), "\n"));
  EXPECT_EQ(Leash({"reconcile"}).exit_code, 0);
  EXPECT_THAT(AgentState(), HasSubstr("enforced"));
  EXPECT_TRUE(Reads("/a/x")) << ReadAll(files_->Join("decisions.jsonl"));
}

// What the kernel says about vm.memfd_noexec here: -1 when the setting is absent.
int MemfdNoexec() {
  std::ifstream in("/proc/sys/vm/memfd_noexec");
  int value = -1;
  in >> value;
  return in ? value : -1;
}

TEST_F(NamedListsAndExecRoutesTest, StatusAndValidateSayEachOpenExecRouteWithTheSettingThatClosesIt) {
  ASSERT_NO_FATAL_FAILURE(StartLeashd(absl::StrCat("\"", Path("/a"), "\"")));
  const int memfd_noexec = MemfdNoexec();
  // CI runs on a kernel with the setting; a host without it shows the other wording, tested in
  // //proto/host:exec_routes_test.
  ASSERT_GE(memfd_noexec, 0) << "this kernel has no vm.memfd_noexec";
  const std::string log = leashd_->Log();
  EXPECT_THAT(log, HasSubstr("the routes to running a program that raise no fanotify event:"));
  RunResult status = Leash({"status"});
  EXPECT_THAT(status.out,
              HasSubstr("routes to running a program that raise no fanotify event (no rule sees "
                        "them):"));
  RunResult validate = Leash({"validate"});
  if (memfd_noexec < 2) {
    const std::string open = absl::StrCat("open: memfd exec (vm.memfd_noexec = ", memfd_noexec, ")");
    for (const std::string& said : {log, status.out, validate.out}) {
      EXPECT_THAT(said, HasSubstr(open));
      EXPECT_THAT(said, HasSubstr("closed by vm.memfd_noexec = 2"));
      EXPECT_THAT(said, HasSubstr("which breaks every memfd_create() without"));
    }
  } else {
    EXPECT_THAT(validate.out, Not(HasSubstr("open: memfd exec")));
  }
  // Said as a warning: validate does not fail a policy over the host's settings.
  if (memfd_noexec < 2) {
    EXPECT_THAT(validate.out, HasSubstr("warning  host commands: a route to running programs "
                                        "unseen is open: memfd exec"));
  }
  // The other routes are read too, whichever way this host has them; a mode as chmod shows it.
  EXPECT_THAT(status.out, HasSubstr("user namespaces (user.max_user_namespaces = "));
  struct stat fuse;
  if (stat("/dev/fuse", &fuse) == 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", fuse.st_mode & 07777);
    EXPECT_THAT(status.out, HasSubstr(absl::StrCat("FUSE (/dev/fuse mode ", mode, ")")));
  }
}

}  // namespace
}  // namespace leash::testing
