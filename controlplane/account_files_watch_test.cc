#include "controlplane/account_files_watch.h"

#include <cstdio>
#include <fstream>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using leash::testing::WaitFor;

class AccountFilesWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *leash::testing::TempDir::Create("acctwatch");
    auto watch = AccountFilesWatch::Start(dir_->path(), AccountFilesWatch::DefaultNames(), [this] {
      absl::MutexLock lock(&mu_);
      ++calls_;
    });
    ASSERT_TRUE(watch.ok()) << watch.status();
    watch_ = *std::move(watch);
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  bool CalledSince(int before) {
    return WaitFor([&] { return calls() > before; }, absl::Seconds(5));
  }

  std::unique_ptr<leash::testing::TempDir> dir_;
  std::unique_ptr<AccountFilesWatch> watch_;
  absl::Mutex mu_;
  int calls_ = 0;
};

TEST_F(AccountFilesWatchTest, AWriteInPlaceAsksForAPass) {
  const int before = calls();
  std::ofstream(dir_->Join("subuid")) << "leash-iris:100000:65536\n";
  EXPECT_TRUE(CalledSince(before));
}

TEST_F(AccountFilesWatchTest, AFileReplacedByARenameAsTheShadowToolsDoAsksForAPass) {
  std::ofstream(dir_->Join("subgid")) << "a:1:1\n";
  ASSERT_TRUE(CalledSince(0));
  const int before = calls();
  std::ofstream(dir_->Join("subgid+")) << "a:100000:65536\n";
  ASSERT_EQ(std::rename(dir_->Join("subgid+").c_str(), dir_->Join("subgid").c_str()), 0);
  EXPECT_TRUE(CalledSince(before));
}

TEST_F(AccountFilesWatchTest, OtherFilesOfTheFolderAskForNothing) {
  std::ofstream(dir_->Join("hosts")) << "127.0.0.1 localhost\n";
  std::ofstream(dir_->Join("subuid.lock")) << "1\n";
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(calls(), 0);
}

TEST(AccountFilesWatch, AFolderThatCannotBeWatchedIsAnError) {
  auto watch = AccountFilesWatch::Start("/nonexistent-leash-folder", {"subuid"}, [] {});
  EXPECT_FALSE(watch.ok());
}

}  // namespace
}  // namespace leash::controlplane
