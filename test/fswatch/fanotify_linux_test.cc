// FanotifyLinux's own descriptor handling against the real kernel, as root (the group needs
// CAP_SYS_ADMIN): ReleaseAll closes exactly the batch's descriptors, a run of consecutive
// numbers at a time, and never a descriptor that sits in a gap between them.
#include "fswatch/fanotify_linux.h"

#include <fcntl.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"
#include "test/fixtures/root.h"

namespace leash::fswatch {
namespace {

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

// FAN_NOPIDFD (-1) is a process already gone; FAN_EPIDFD (-2) a pidfd the kernel failed to
// make for a live one. They were swapped: a live process (root's, too) was denied as gone, and a
// gone one was read from /proc unchecked, where its PID may already be another's.
TEST(FanotifyLinux, PidfdInfoRecordValuesAreReadTheWayTheKernelMeansThem) {
  EXPECT_EQ(PidfdFromInfoRecord(7), 7);
  EXPECT_EQ(PidfdFromInfoRecord(FAN_NOPIDFD), FanEvent::kPidfdGone);
  EXPECT_EQ(PidfdFromInfoRecord(FAN_EPIDFD), FanEvent::kNoPidfd);
}

TEST(FanotifyLinux, ReleaseAllClosesTheBatchAndNothingInItsGaps) {
  LEASH_REQUIRE_ROOT();
  absl::StatusOr<std::unique_ptr<FanotifyLinux>> group =
      FanotifyLinux::Open(IdentityPreference::kBest);
  ASSERT_TRUE(group.ok()) << group.status();

  // Eight consecutive descriptors; the 3rd and the 6th are not the batch's (they stand for the
  // group, the log, a cached pidfd) and must survive.
  std::vector<int> fds;
  for (int i = 0; i < 8; ++i) {
    fds.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_GE(fds.back(), 0);
  }
  for (int i = 1; i < 8; ++i) ASSERT_EQ(fds[i], fds[i - 1] + 1) << "descriptors not consecutive";
  std::vector<FanEvent> batch;
  for (int i : {7, 0, 1, 3, 4, 6}) {  // out of order, as events may be
    FanEvent event;
    event.fd = fds[i];
    event.pidfd = FanEvent::kNoPidfd;
    batch.push_back(event);
  }
  FanEvent overflow;  // an overflow event carries no descriptor
  overflow.fd = -1;
  batch.push_back(overflow);

  (*group)->ReleaseAll(batch);
  for (int i : {0, 1, 3, 4, 6, 7}) EXPECT_FALSE(IsOpen(fds[i])) << "batch descriptor " << i;
  EXPECT_TRUE(IsOpen(fds[2]));
  EXPECT_TRUE(IsOpen(fds[5]));
  EXPECT_TRUE(IsOpen((*group)->group_fd()));
  close(fds[2]);
  close(fds[5]);
}

}  // namespace
}  // namespace leash::fswatch
