#include "proxy/held_port_sockets.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proxy/socket_address.h"

namespace leash::proxy {
namespace {

using ::testing::HasSubstr;

// A TCP (or `type`) socket bound to ip:port (port 0: the kernel's choice), or -1.
int Bound(const std::string& ip, uint16_t port, int type = SOCK_STREAM, bool reuse = false) {
  SocketAddress address{*engine::ParseIpAddress(ip), port};
  const int fd = socket(Family(address), type | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (Family(address) == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  sockaddr_storage storage;
  const socklen_t length = ToSockaddr(address, &storage);
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

uint16_t PortOf(int fd) { return LocalAddressOf(fd)->port; }

class HeldPortSocketsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int fd : fds_) close(fd);
  }
  int Keep(int fd) {
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    return fd;
  }
  absl::Status AdoptOne(int fd) {
    return AdoptHeldPortSockets({fd}, "127.0.0.1", "::1").status();
  }
  std::vector<int> fds_;
};

TEST_F(HeldPortSocketsTest, EachSocketIsFoundByItsAddressAndPortAndMadeNonBlocking) {
  const int v4 = Keep(Bound("127.0.0.1", 0));
  const int v6 = Keep(Bound("::1", 0));
  absl::StatusOr<HeldPortSockets> held = AdoptHeldPortSockets({v4, v6}, "127.0.0.1", "::1");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(held->ipv6_available);
  ASSERT_EQ(held->ipv4.size(), 1u);
  ASSERT_EQ(held->ipv6.size(), 1u);
  EXPECT_EQ(held->ipv4.at(PortOf(v4)), v4);
  EXPECT_EQ(held->ipv6.at(PortOf(v6)), v6);
  EXPECT_TRUE(fcntl(v4, F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(fcntl(v6, F_GETFD) & FD_CLOEXEC);
}

// The DNS filter's UDP sockets come the same way, on the same ports, in tables of their own.
TEST_F(HeldPortSocketsTest, UdpSocketsOfTheSamePortsGoToTheirOwnTables) {
  const int tcp = Keep(Bound("127.0.0.1", 0));
  const int udp = Keep(Bound("127.0.0.1", PortOf(tcp), SOCK_DGRAM));
  const int udp6 = Keep(Bound("::1", 0, SOCK_DGRAM));
  absl::StatusOr<HeldPortSockets> held = AdoptHeldPortSockets({tcp, udp, udp6}, "127.0.0.1", "::1");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->ipv4.at(PortOf(tcp)), tcp);
  EXPECT_EQ(held->udp_ipv4.at(PortOf(tcp)), udp);
  EXPECT_EQ(held->udp_ipv6.at(PortOf(udp6)), udp6);
  EXPECT_TRUE(held->ipv6.empty());
  EXPECT_TRUE(fcntl(udp, F_GETFL) & O_NONBLOCK);
}

TEST_F(HeldPortSocketsTest, AnythingButATcpOrUdpSocketBoundOnAListenAddressIsRefused) {
  // A stream socket that is not TCP (a raw socket would say as much, but needs CAP_NET_RAW,
  // and this test runs without privileges).
  EXPECT_THAT(AdoptOne(Keep(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0))).message(),
              HasSubstr("is not a TCP or UDP socket"));
  EXPECT_THAT(AdoptOne(Keep(Bound("127.0.0.2", 0))).message(),
              HasSubstr("not to 127.0.0.1 or ::1"));
  EXPECT_THAT(AdoptOne(Keep(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))).message(),
              HasSubstr("is not bound to a port"));
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  Keep(pipe_fds[0]);
  Keep(pipe_fds[1]);
  EXPECT_THAT(AdoptOne(pipe_fds[0]).message(), HasSubstr("is not a socket"));
  EXPECT_THAT(AdoptOne(1000000).message(), HasSubstr("is not open"));
  const absl::Status status = AdoptOne(pipe_fds[0]);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("inherited port socket ", pipe_fds[0])));
}

TEST_F(HeldPortSocketsTest, TwoSocketsForOnePortAreRefused) {
  const int first = Keep(Bound("127.0.0.1", 0, SOCK_STREAM, /*reuse=*/true));
  const int second = Keep(Bound("127.0.0.1", PortOf(first), SOCK_STREAM, /*reuse=*/true));
  EXPECT_THAT(AdoptHeldPortSockets({first, second}, "127.0.0.1", "::1").status().message(),
              HasSubstr("is a second TCP socket for 127.0.0.1:"));
}

TEST(Ipv6AddressExistsTest, LoopbackExistsAndADocumentationAddressDoesNot) {
  EXPECT_TRUE(Ipv6AddressExists("::1"));
  EXPECT_FALSE(Ipv6AddressExists("2001:db8::77"));
  EXPECT_FALSE(Ipv6AddressExists("not an address"));
}

}  // namespace
}  // namespace leash::proxy
