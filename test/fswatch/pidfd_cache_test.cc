// PidfdCache against the real kernel, as root (children change UID; clone3 with set_tid hands a
// reaped process's PID to a new one on purpose). What it must show: the credentials are read
// anew on every call, and a PID recycled to another process is never attributed to the process
// whose pidfd the cache still held.
#include "fswatch/pidfd_identity.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"

namespace leash::fswatch {
namespace {

constexpr uid_t kNobody = 65534;
constexpr uid_t kOther = 65533;

// A child that drops to `uid` (unless 0), says so on a pipe, and then waits on `control` for
// commands: 'u' + 4 bytes = setresuid to that UID and say so; EOF = exit.
class Child {
 public:
  static Child Start(uid_t uid, pid_t set_tid = 0) {
    Child child;
    int ready[2], control[2];
    if (pipe(ready) != 0 || pipe(control) != 0) return child;
    const pid_t pid = leash::testing::ForkAtPid(set_tid);
    if (pid == 0) {
      close(ready[0]);
      close(control[1]);
      if (uid != 0 && setresuid(uid, uid, uid) != 0) _exit(1);
      (void)!write(ready[1], "r", 1);
      char command;
      while (read(control[0], &command, 1) == 1) {
        uint32_t next;
        if (command == 'u' && read(control[0], &next, sizeof(next)) == sizeof(next) &&
            setresuid(next, next, next) == 0) {
          (void)!write(ready[1], "u", 1);
        }
      }
      _exit(0);
    }
    close(ready[1]);
    close(control[0]);
    child.pid_ = pid;
    child.ready_ = ready[0];
    child.control_ = control[1];
    if (pid < 0) {
      child.error_ = errno;
      return child;
    }
    char c;
    if (read(child.ready_, &c, 1) != 1) child.error_ = EIO;
    return child;
  }

  Child() = default;
  Child(Child&& other) noexcept { *this = std::move(other); }
  Child& operator=(Child&& other) noexcept {
    std::swap(pid_, other.pid_);
    std::swap(ready_, other.ready_);
    std::swap(control_, other.control_);
    std::swap(error_, other.error_);
    return *this;
  }
  ~Child() { Reap(); }

  pid_t pid() const { return pid_; }
  int error() const { return error_; }

  bool SetUid(uint32_t uid) {
    char command[1 + sizeof(uid)] = {'u'};
    memcpy(command + 1, &uid, sizeof(uid));
    char c;
    return write(control_, command, sizeof(command)) == sizeof(command) &&
           read(ready_, &c, 1) == 1 && c == 'u';
  }

  // Ends the child and reaps it: its PID is free for the next process after this.
  void Reap() {
    if (control_ >= 0) close(control_);
    if (ready_ >= 0) close(ready_);
    control_ = ready_ = -1;
    // Killed, not only told: a sibling forked later holds a copy of the control pipe.
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int ready_ = -1;
  int control_ = -1;
  int error_ = 0;
};

class PidfdCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    ASSERT_TRUE(PidfdCredsWork()) << "this kernel has no PIDFD_GET_INFO (Linux >= 6.13)";
  }
};

TEST_F(PidfdCacheTest, ReadsTheCredentialsOfTheProcessHoldingThePid) {
  PidfdCache cache(16);
  Child child = Child::Start(kNobody);
  ASSERT_EQ(child.error(), 0);
  Creds creds;
  ASSERT_EQ(cache.CredsOf(child.pid(), creds), 0);
  EXPECT_EQ(creds.ruid, kNobody);
  ASSERT_EQ(cache.CredsOf(getpid(), creds), 0);
  EXPECT_EQ(creds.ruid, 0u);
}

// A root process that setuid()s into an agent's UID (how every agent process starts) is seen
// under its new UID on the very next event: only the pidfd is cached, never the UID.
TEST_F(PidfdCacheTest, ACredentialChangeIsSeenOnTheNextCall) {
  PidfdCache cache(16);
  Child child = Child::Start(0);
  ASSERT_EQ(child.error(), 0);
  Creds creds;
  ASSERT_EQ(cache.CredsOf(child.pid(), creds), 0);
  ASSERT_EQ(creds.ruid, 0u);
  ASSERT_EQ(cache.open_pidfds(), 1u);
  ASSERT_TRUE(child.SetUid(kNobody));
  ASSERT_EQ(cache.CredsOf(child.pid(), creds), 0);
  EXPECT_EQ(creds.ruid, kNobody);
  EXPECT_EQ(cache.open_pidfds(), 1u);  // the same pidfd served both calls
}

// The PID-reuse race, made to happen: the cache holds a pidfd for a root process at PID p,
// that process is reaped, and a process of another UID is created at exactly p. The cache must
// report the new process's UID, not root.
TEST_F(PidfdCacheTest, ARecycledPidIsAttributedToItsNewHolder) {
  PidfdCache cache(16);
  Child first = Child::Start(0);
  ASSERT_EQ(first.error(), 0);
  const pid_t p = first.pid();
  Creds creds;
  ASSERT_EQ(cache.CredsOf(p, creds), 0);
  ASSERT_EQ(creds.ruid, 0u);

  first.Reap();
  // Between the reap and the reuse nobody holds p: ESRCH from the kept pidfd (the slot is
  // dropped), then again from a fresh pidfd_open.
  EXPECT_EQ(cache.CredsOf(p, creds), ESRCH);
  ASSERT_EQ(cache.CredsOf(p, creds), ESRCH);

  Child second = Child::Start(kNobody, /*set_tid=*/p);
  ASSERT_EQ(second.error(), 0) << "clone3 could not hand out PID " << p;
  ASSERT_EQ(second.pid(), p);
  ASSERT_EQ(cache.CredsOf(p, creds), 0);
  EXPECT_EQ(creds.ruid, kNobody);
}

// The same, with the cache still holding the first process's pidfd when the PID comes back
// (no call in between that would have noticed the reap).
TEST_F(PidfdCacheTest, AStalePidfdIsReplacedNotTrusted) {
  PidfdCache cache(16);
  Child first = Child::Start(0);
  ASSERT_EQ(first.error(), 0);
  const pid_t p = first.pid();
  Creds creds;
  ASSERT_EQ(cache.CredsOf(p, creds), 0);
  ASSERT_EQ(creds.ruid, 0u);
  first.Reap();

  Child second = Child::Start(kOther, /*set_tid=*/p);
  ASSERT_EQ(second.error(), 0) << "clone3 could not hand out PID " << p;
  ASSERT_EQ(cache.CredsOf(p, creds), 0);
  EXPECT_EQ(creds.ruid, kOther);
  EXPECT_EQ(cache.open_pidfds(), 1u);  // the stale pidfd was closed, not leaked
}

// Two processes sharing one slot take turns in it and are each read correctly; the cache never
// holds more descriptors than it has slots.
TEST_F(PidfdCacheTest, SlotsAreSharedAndBounded) {
  PidfdCache one(1);
  ASSERT_EQ(one.slots(), 1u);
  Child a = Child::Start(kNobody);
  Child b = Child::Start(kOther);
  ASSERT_EQ(a.error(), 0);
  ASSERT_EQ(b.error(), 0);
  for (int round = 0; round < 3; ++round) {
    Creds creds;
    ASSERT_EQ(one.CredsOf(a.pid(), creds), 0);
    EXPECT_EQ(creds.ruid, kNobody);
    ASSERT_EQ(one.CredsOf(b.pid(), creds), 0);
    EXPECT_EQ(creds.ruid, kOther);
    EXPECT_EQ(one.open_pidfds(), 1u);
  }

  PidfdCache eight(8);
  std::vector<Child> children;
  for (int i = 0; i < 20; ++i) {
    children.push_back(Child::Start(kNobody));
    ASSERT_EQ(children.back().error(), 0);
    Creds creds;
    ASSERT_EQ(eight.CredsOf(children.back().pid(), creds), 0);
  }
  EXPECT_LE(eight.open_pidfds(), 8u);
}

// A process the watcher cannot name (PID 0: outside its PID namespace) is alive and waiting;
// it must not be reported as gone (ESRCH), which the loop answers without judging.
TEST_F(PidfdCacheTest, AnUnnameableProcessIsAnErrorNotGone) {
  PidfdCache cache(16);
  Creds creds;
  EXPECT_EQ(cache.CredsOf(0, creds), EINVAL);
}

}  // namespace
}  // namespace leash::fswatch
