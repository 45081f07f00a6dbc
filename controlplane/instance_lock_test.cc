#include "controlplane/instance_lock.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

class InstanceLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();  // the lock folder must be root's
    dir_ = *leash::testing::TempDir::Create("ilk");
    ASSERT_EQ(mkdir(dir_->Join("run-a").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(dir_->Join("run-b").c_str(), 0755), 0);
  }
  std::string NetnsDir() const { return dir_->Join("netns"); }
  std::unique_ptr<leash::testing::TempDir> dir_;
};

TEST_F(InstanceLockTest, ASecondInstanceOnTheSameRunFolderIsRefusedNamingTheHolder) {
  auto first = LockInstance(dir_->Join("run-a"), absl::ZeroDuration(), NetnsDir());
  ASSERT_TRUE(first.ok() && first->acquired()) << first.status();
  auto second = LockInstance(dir_->Join("run-a"), absl::Milliseconds(100), NetnsDir());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->acquired());
  EXPECT_THAT(second->held_by,
              HasSubstr(absl::StrCat("a leashd is running on ", dir_->Join("run-a"), " (pid ",
                                     getpid(), ")")));
}

// The nftables tables and the proxy ports are the network namespace's: other folders do not
// make a second leashd safe.
TEST_F(InstanceLockTest, ASecondInstanceInTheSameNetworkNamespaceIsRefusedOnOtherFolders) {
  auto first = LockInstance(dir_->Join("run-a"), absl::ZeroDuration(), NetnsDir());
  ASSERT_TRUE(first.ok() && first->acquired()) << first.status();
  auto second = LockInstance(dir_->Join("run-b"), absl::ZeroDuration(), NetnsDir());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->acquired());
  EXPECT_FALSE(second->run_dir.has_value()) << "run-b's lock is let go again";
  EXPECT_THAT(second->held_by,
              HasSubstr(absl::StrCat("a leashd is running in this network namespace (pid ",
                                     getpid(), ", lock ", NetnsDir(), "/net-")));
  auto alone = LockNetworkNamespace(absl::ZeroDuration(), NetnsDir());
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_FALSE(alone->acquired());
}

TEST_F(InstanceLockTest, BothLocksAreFreeAgainOnceReleased) {
  {
    auto first = LockInstance(dir_->Join("run-a"), absl::ZeroDuration(), NetnsDir());
    ASSERT_TRUE(first.ok() && first->acquired()) << first.status();
  }
  auto other = LockInstance(dir_->Join("run-b"), absl::ZeroDuration(), NetnsDir());
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->acquired()) << other->held_by;
}

// An error that says nothing about a holder (here: the run folder is a file) is an error, not
// "a leashd is running": the callers' advice to stop one would be wrong.
TEST_F(InstanceLockTest, ARunFolderThatIsAFileIsAnErrorNotAHolder) {
  const std::string file = dir_->Join("not-a-folder");
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  auto lock = LockInstance(file, absl::ZeroDuration(), NetnsDir());
  EXPECT_FALSE(lock.ok());
  EXPECT_THAT(std::string(lock.status().message()), HasSubstr("not-a-folder"));
}

TEST_F(InstanceLockTest, ALockFolderOthersCanWriteIsRefused) {
  ASSERT_EQ(mkdir(NetnsDir().c_str(), 0777), 0);
  ASSERT_EQ(chmod(NetnsDir().c_str(), 0777), 0);
  auto lock = LockNetworkNamespace(absl::ZeroDuration(), NetnsDir());
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(lock.status().message()), HasSubstr("chmod 0755"));
}

}  // namespace
}  // namespace leash::controlplane
