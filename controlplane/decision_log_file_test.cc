// The decision log's open, against real files, folders and accounts on a tmpfs mounted for the
// test (root: the log is root's, and the attacks are another account's links and folders).
#include "controlplane/decision_log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/sidecar/decision_log.h"
#include "test/fixtures/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/test_account.h"
#include "test/fixtures/tmpfs.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

class DecisionLogOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    absl::StatusOr<std::unique_ptr<leash::testing::TmpfsMount>> mount =
        leash::testing::TmpfsMount::Create();
    ASSERT_TRUE(mount.ok()) << mount.status();
    mount_ = *std::move(mount);
    root_ = mount_->path();
    ASSERT_EQ(mkdir((root_ + "/log").c_str(), 0750), 0);
  }

  std::unique_ptr<leash::testing::TmpfsMount> mount_;
  std::string root_;
};

TEST_F(DecisionLogOpenTest, CreatesARootOwnedFileOnlyRootWrites) {
  absl::StatusOr<int> fd = OpenDecisionLog(root_ + "/log/new/decisions.jsonl");
  ASSERT_TRUE(fd.ok()) << fd.status();
  ASSERT_EQ(write(*fd, "one\n", 4), 4);
  close(*fd);
  struct stat st;
  ASSERT_EQ(stat((root_ + "/log/new/decisions.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_EQ(stat((root_ + "/log/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  // Appends: a second open does not truncate.
  fd = OpenDecisionLog(root_ + "/log/new/decisions.jsonl");
  ASSERT_TRUE(fd.ok()) << fd.status();
  ASSERT_EQ(write(*fd, "two\n", 4), 4);
  close(*fd);
  EXPECT_EQ(ReadAll(root_ + "/log/new/decisions.jsonl"), "one\ntwo\n");
}

TEST_F(DecisionLogOpenTest, ASymlinkPlantedAsTheLogIsRefusedAndItsTargetUntouched) {
  const std::string target = root_ + "/shadow";
  WriteFile(target, "root:secret\n");
  ASSERT_EQ(symlink(target.c_str(), (root_ + "/log/decisions.jsonl").c_str()), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(root_ + "/log/decisions.jsonl");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(fd.status().message(), HasSubstr("is a symlink"));
  EXPECT_EQ(ReadAll(target), "root:secret\n");
}

TEST_F(DecisionLogOpenTest, ADanglingSymlinkPlantedAsTheLogCreatesNothingAtItsTarget) {
  const std::string target = root_ + "/created-through-link";
  ASSERT_EQ(symlink(target.c_str(), (root_ + "/log/decisions.jsonl").c_str()), 0);
  EXPECT_FALSE(OpenDecisionLog(root_ + "/log/decisions.jsonl").ok());
  EXPECT_NE(access(target.c_str(), F_OK), 0);
}

TEST_F(DecisionLogOpenTest, ASymlinkedFolderOnTheWayIsRefusedAndNeverFollowed) {
  ASSERT_EQ(mkdir((root_ + "/elsewhere").c_str(), 0755), 0);
  WriteFile(root_ + "/elsewhere/decisions.jsonl", "untouched\n");
  ASSERT_EQ(symlink((root_ + "/elsewhere").c_str(), (root_ + "/log/via").c_str()), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(root_ + "/log/via/decisions.jsonl");
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr(root_ + "/log/via is a symlink"));
  EXPECT_EQ(ReadAll(root_ + "/elsewhere/decisions.jsonl"), "untouched\n");
  // The same link higher up the path.
  ASSERT_EQ(mkdir((root_ + "/elsewhere/deeper").c_str(), 0755), 0);
  EXPECT_FALSE(OpenDecisionLog(root_ + "/log/via/deeper/decisions.jsonl").ok());
  EXPECT_NE(access((root_ + "/elsewhere/deeper/decisions.jsonl").c_str(), F_OK), 0);
}

TEST_F(DecisionLogOpenTest, AGroupWritableLogFolderIsRefusedNamingTheFolderAndTheFix) {
  ASSERT_EQ(chmod((root_ + "/log").c_str(), 0770), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(root_ + "/log/decisions.jsonl");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(fd.status().message(), HasSubstr(absl::StrCat(root_, "/log is writable by its group")));
  EXPECT_THAT(fd.status().message(), HasSubstr(absl::StrCat("chmod go-w ", root_, "/log")));
  EXPECT_NE(access((root_ + "/log/decisions.jsonl").c_str(), F_OK), 0);
}

TEST_F(DecisionLogOpenTest, AWritableAncestorFolderIsRefusedToo) {
  ASSERT_EQ(chmod(root_.c_str(), 0777), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(root_ + "/log/decisions.jsonl");
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr(absl::StrCat(root_, " is writable by everyone")));
  // A world-writable sticky folder is no safer as the log's own folder.
  ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  ASSERT_EQ(chmod((root_ + "/log").c_str(), 01777), 0);
  EXPECT_FALSE(OpenDecisionLog(root_ + "/log/decisions.jsonl").ok());
}

TEST_F(DecisionLogOpenTest, ALogFolderOwnedByAnotherAccountIsRefusedNamingChownRoot) {
  absl::StatusOr<std::unique_ptr<leash::testing::TestAccount>> account =
      leash::testing::TestAccount::Create(absl::StrCat("leash-lg", getpid() % 100000));
  ASSERT_TRUE(account.ok()) << account.status();
  ASSERT_EQ(chown((root_ + "/log").c_str(), (*account)->uid(), 0), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(root_ + "/log/decisions.jsonl");
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr(absl::StrCat("chown root ", root_, "/log")));
}

TEST_F(DecisionLogOpenTest, AFifoAHardLinkOrAFileOfAnotherOwnerAsTheLogIsRefused) {
  const std::string log = root_ + "/log/decisions.jsonl";
  ASSERT_EQ(mkfifo(log.c_str(), 0600), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(log);  // must not hang on the FIFO
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr("FIFO"));
  ASSERT_EQ(unlink(log.c_str()), 0);

  WriteFile(root_ + "/passwd", "x\n");
  ASSERT_EQ(link((root_ + "/passwd").c_str(), log.c_str()), 0);
  fd = OpenDecisionLog(log);
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr("a hard link"));
  EXPECT_EQ(ReadAll(root_ + "/passwd"), "x\n");
  ASSERT_EQ(unlink(log.c_str()), 0);

  WriteFile(log, "");
  ASSERT_EQ(chown(log.c_str(), 65534, 65534), 0);
  fd = OpenDecisionLog(log);
  ASSERT_FALSE(fd.ok());
  EXPECT_THAT(fd.status().message(), HasSubstr("owned by uid 65534"));
}

TEST_F(DecisionLogOpenTest, AnExistingLogOthersCouldWriteIsMadeRootOnly) {
  const std::string log = root_ + "/log/decisions.jsonl";
  WriteFile(log, "old\n");
  ASSERT_EQ(chmod(log.c_str(), 0666), 0);
  absl::StatusOr<int> fd = OpenDecisionLog(log);
  ASSERT_TRUE(fd.ok()) << fd.status();
  close(*fd);
  struct stat st;
  ASSERT_EQ(stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

leash::v1::DecisionRecord Numbered(int n) {
  leash::v1::DecisionRecord record;
  record.set_ref(absl::StrCat("n", n));
  record.set_uid(4242);
  record.set_surface("filesystem");
  record.set_action("block");
  record.set_reason("rotation test");
  return record;
}

// logrotate's copytruncate, step by step: copy the file, then truncate it in place. The
// writers' descriptor is O_APPEND, so their next line goes to the new end (offset 0), not to
// the offset they had reached (which would leave a hole of NULs and, on a full disk, no room).
TEST_F(DecisionLogOpenTest, CopytruncateRotationLosesNoLineWrittenAfterIt) {
  const std::string log = root_ + "/log/decisions.jsonl";
  absl::StatusOr<int> fd = OpenDecisionLog(log);
  ASSERT_TRUE(fd.ok()) << fd.status();
  sidecar::AsyncDecisionLog writer(*fd);
  for (int i = 0; i < 500; ++i) writer.Record(Numbered(i));
  writer.Flush();
  absl::StatusOr<leash::testing::RunResult> copied =
      leash::testing::Run({"cp", "--sparse=never", log, log + ".1"});
  ASSERT_TRUE(copied.ok() && copied->exit_code == 0);
  absl::StatusOr<leash::testing::RunResult> truncated =
      leash::testing::Run({"truncate", "--size=0", log});
  ASSERT_TRUE(truncated.ok() && truncated->exit_code == 0);
  for (int i = 500; i < 1000; ++i) writer.Record(Numbered(i));
  writer.Flush();

  const std::string before = ReadAll(log + ".1");
  const std::string after = ReadAll(log);
  EXPECT_EQ(after.find('\0'), std::string::npos) << "a hole where the old end was";
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.front(), '{');
  for (int i = 0; i < 1000; ++i) {
    const std::string ref = absl::StrCat("\"ref\":\"n", i, "\"");
    EXPECT_TRUE(absl::StrContains(i < 500 ? before : after, ref)) << i;
    EXPECT_FALSE(absl::StrContains(i < 500 ? after : before, ref)) << i;
  }
}

TEST(DecisionLogPathTest, ARelativePathIsRefused) {
  EXPECT_EQ(OpenDecisionLog("var/log/x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenDecisionLog("/var/log/../x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace leash::controlplane
