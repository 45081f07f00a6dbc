#include "controlplane/systemd_notify.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

// A datagram socket bound where systemd's would be: a path, or an abstract name.
class NotifyReceiver {
 public:
  explicit NotifyReceiver(const std::string& name) : name_(name) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (name.size() >= sizeof(address.sun_path)) return;
    std::memcpy(address.sun_path, name.data(), name.size());
    if (name[0] == '@') address.sun_path[0] = '\0';
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&address),
                  static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())) == 0;
  }
  ~NotifyReceiver() {
    close(fd_);
    if (name_[0] == '/') unlink(name_.c_str());
  }
  bool bound() const { return bound_; }
  // One datagram's text and the descriptors it carried (closed here); "<nothing>" when none.
  std::string ReceiveWithFds(size_t* fds) {
    char buffer[4096];
    iovec iov{buffer, sizeof(buffer)};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * 253));
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = recvmsg(fd_, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    *fds = 0;
    if (n < 0) return "<nothing>";
    for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const int* data = reinterpret_cast<const int*>(CMSG_DATA(h));
      for (size_t i = 0; i < count; ++i) close(data[i]);
      *fds += count;
    }
    return std::string(buffer, static_cast<size_t>(n));
  }
  std::string Receive() {
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    return n < 0 ? "<nothing>" : std::string(buffer, static_cast<size_t>(n));
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

class SystemdNotifyTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
  }
};

// More descriptors than one SCM_RIGHTS message carries go in several datagrams, each a
// complete FDSTORE=1 message with the name and FDPOLL=0.
TEST_F(SystemdNotifyTest, StoredDescriptorsGoInDatagramsOfAtMost253) {
  const std::string path = absl::StrCat("@leash-fdstore-test-", getpid());
  NotifyReceiver receiver(path);
  ASSERT_TRUE(receiver.bound());
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  std::vector<int> fds(600, -1);
  for (int& fd : fds) fd = dup(0);
  ASSERT_TRUE(StoreFdsInSystemd("leash-proxy-ports", fds).ok());
  for (int fd : fds) close(fd);
  std::vector<size_t> counts;
  for (int i = 0; i < 3; ++i) {
    size_t count = 0;
    EXPECT_EQ(receiver.ReceiveWithFds(&count),
              "FDSTORE=1\nFDNAME=leash-proxy-ports\nFDPOLL=0");
    counts.push_back(count);
  }
  EXPECT_THAT(counts, ::testing::ElementsAre(253u, 253u, 94u));
  size_t none = 0;
  EXPECT_EQ(receiver.ReceiveWithFds(&none), "<nothing>");
}

// LISTEN_FDS for this process: descriptors 3.. with their names, close-on-exec, and the
// variables gone so no child takes them. For another process (LISTEN_PID): nothing.
TEST_F(SystemdNotifyTest, ListenFdsAreTakenOnlyForThisProcessAndTheVariablesUnset) {
  setenv("LISTEN_PID", "1", 1);
  setenv("LISTEN_FDS", "1", 1);
  EXPECT_TRUE(TakeListenFds().empty());
  EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);
  // Descriptors 3 and 4, as systemd passes them.
  const int a = dup(0), b = dup(0);
  const int moved_a = fcntl(a, F_DUPFD, 100), moved_b = fcntl(b, F_DUPFD, 100);
  close(a);
  close(b);
  const int saved3 = fcntl(3, F_DUPFD, 200), saved4 = fcntl(4, F_DUPFD, 200);
  ASSERT_EQ(dup2(moved_a, 3), 3);
  ASSERT_EQ(dup2(moved_b, 4), 4);
  setenv("LISTEN_PID", absl::StrCat(getpid()).c_str(), 1);
  setenv("LISTEN_FDS", "2", 1);
  setenv("LISTEN_FDNAMES", "leash-proxy-ports:other", 1);
  const std::vector<std::pair<int, std::string>> taken = TakeListenFds();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0], (std::pair<int, std::string>{3, "leash-proxy-ports"}));
  EXPECT_EQ(taken[1], (std::pair<int, std::string>{4, "other"}));
  EXPECT_EQ(fcntl(3, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(std::getenv("LISTEN_PID"), nullptr);
  EXPECT_EQ(std::getenv("LISTEN_FDNAMES"), nullptr);
  // Put back whatever the test runner had there.
  for (auto [fd, saved] : {std::pair{3, saved3}, std::pair{4, saved4}}) {
    if (saved >= 0) {
      dup2(saved, fd);
      close(saved);
    } else {
      close(fd);
    }
  }
  close(moved_a);
  close(moved_b);
}

TEST_F(SystemdNotifyTest, WithoutNotifySocketNothingIsSentAndNothingFails) {
  unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(NotifySystemd("READY=1").ok());
}

TEST_F(SystemdNotifyTest, ReadyReachesASocketNamedByPath) {
  // Short enough for sun_path wherever the test runs (Bazel's TEST_TMPDIR may not be).
  const std::string path = absl::StrCat("/tmp/leash-notify-test-", getpid());
  NotifyReceiver receiver(path);
  ASSERT_TRUE(receiver.bound());
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ASSERT_TRUE(NotifySystemd("READY=1\nSTATUS=3 subjects in force").ok());
  EXPECT_EQ(receiver.Receive(), "READY=1\nSTATUS=3 subjects in force");
}

TEST_F(SystemdNotifyTest, WatchdogReachesAnAbstractSocket) {
  const std::string name = absl::StrCat("@leash-notify-test-", getpid());
  NotifyReceiver receiver(name);
  ASSERT_TRUE(receiver.bound());
  setenv("NOTIFY_SOCKET", name.c_str(), 1);
  ASSERT_TRUE(NotifySystemd("WATCHDOG=1").ok());
  EXPECT_EQ(receiver.Receive(), "WATCHDOG=1");
}

TEST_F(SystemdNotifyTest, ASocketThatIsGoneIsAnErrorNamingIt) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/no-such-notify-socket");
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  const absl::Status sent = NotifySystemd("READY=1");
  EXPECT_FALSE(sent.ok());
  EXPECT_THAT(sent.message(), HasSubstr(path));
  setenv("NOTIFY_SOCKET", "relative/name", 1);
  EXPECT_THAT(NotifySystemd("READY=1").message(), HasSubstr("neither a path nor an abstract name"));
}

TEST_F(SystemdNotifyTest, TheWatchdogIsPingedAtHalfItsTimeoutAndOnlyForThisProcess) {
  EXPECT_EQ(WatchdogPingInterval(), std::nullopt);
  setenv("WATCHDOG_USEC", "30000000", 1);
  EXPECT_EQ(WatchdogPingInterval(), absl::Seconds(15));
  setenv("WATCHDOG_PID", absl::StrCat(getpid()).c_str(), 1);
  EXPECT_EQ(WatchdogPingInterval(), absl::Seconds(15));
  setenv("WATCHDOG_PID", absl::StrCat(getpid() + 1).c_str(), 1);
  EXPECT_EQ(WatchdogPingInterval(), std::nullopt) << "another process's watchdog";
  unsetenv("WATCHDOG_PID");
  setenv("WATCHDOG_USEC", "0", 1);
  EXPECT_EQ(WatchdogPingInterval(), std::nullopt);
}

}  // namespace
}  // namespace leash::controlplane
