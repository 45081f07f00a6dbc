#include "base/file_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::base {
namespace {

using ::testing::HasSubstr;

std::string LockPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  unlink(path.c_str());  // each test starts from no file
  return path;
}

// Whether a separate process could take `path` exclusively right now.
bool AnotherProcessCanTake(const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    absl::StatusOr<std::optional<FileLock>> lock = FileLock::TryExclusive(path);
    _exit(lock.ok() && lock->has_value() ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(FileLockTest, TryExclusiveRefusesWhileAnotherHolderHasTheFile) {
  const std::string path = LockPath("instance.lock");
  absl::StatusOr<std::optional<FileLock>> first = FileLock::TryExclusive(path);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_value());
  EXPECT_FALSE(AnotherProcessCanTake(path));
  // A second open in the same process is another holder too (flock is per open file).
  absl::StatusOr<std::optional<FileLock>> second = FileLock::TryExclusive(path);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->has_value());
}

TEST(FileLockTest, TheLockGoesWithItsHolder) {
  const std::string path = LockPath("released.lock");
  {
    absl::StatusOr<std::optional<FileLock>> held = FileLock::TryExclusive(path);
    ASSERT_TRUE(held.ok() && held->has_value());
    EXPECT_FALSE(AnotherProcessCanTake(path));
  }
  EXPECT_TRUE(AnotherProcessCanTake(path));

  // A holder that is killed, with no chance to clean up, leaves nothing behind either.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    absl::StatusOr<std::optional<FileLock>> lock = FileLock::TryExclusive(path);
    if (!lock.ok() || !lock->has_value()) _exit(1);
    (void)!write(ready[1], "x", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  EXPECT_FALSE(AnotherProcessCanTake(path));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_TRUE(AnotherProcessCanTake(path));
}

TEST(FileLockTest, SharedHoldersExcludeAnExclusiveOne) {
  const std::string path = LockPath("shared.lock");
  absl::StatusOr<FileLock> reader = FileLock::Acquire(path, FileLock::Mode::kShared);
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<FileLock> another_reader = FileLock::Acquire(path, FileLock::Mode::kShared);
  ASSERT_TRUE(another_reader.ok()) << another_reader.status();
  EXPECT_FALSE(AnotherProcessCanTake(path));
}

TEST(FileLockTest, TheHolderCanSayWhoItIs) {
  const std::string path = LockPath("who.lock");
  absl::StatusOr<std::optional<FileLock>> lock = FileLock::TryExclusive(path);
  ASSERT_TRUE(lock.ok() && lock->has_value());
  ASSERT_TRUE((*lock)->Write("a longer first line\n").ok());
  ASSERT_TRUE((*lock)->Write("42\n").ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "42\n");
}

TEST(FileLockTest, AMissingFolderIsAnErrorNamingThePath) {
  const std::string path = LockPath("no-such-folder/x.lock");
  absl::StatusOr<std::optional<FileLock>> lock = FileLock::TryExclusive(path);
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(std::string(lock.status().message()), HasSubstr(path));
}

}  // namespace
}  // namespace leash::base
