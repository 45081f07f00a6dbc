#include "controlplane/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

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
  }
};

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
