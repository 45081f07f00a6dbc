#include "controlplane/port_holders.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

// A socket bound on 127.0.0.1 (kernel-chosen port) of type `type`; its port in `port`.
int BindLoopback(int type, uint16_t* port) {
  const int fd = socket(AF_INET, type, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof(in)) != 0) return -1;
  socklen_t length = sizeof(in);
  getsockname(fd, reinterpret_cast<sockaddr*>(&in), &length);
  *port = ntohs(in.sin_port);
  return fd;
}

TEST(PortHoldersTest, FindsTheProcessAndUidHoldingAPortAndNotThisProcess) {
  uint16_t tcp_port = 0, udp_port = 0;
  const int tcp = BindLoopback(SOCK_STREAM, &tcp_port);
  // Listening: a TCP socket only bound is not in /proc/net/tcp (port_holders.h).
  ASSERT_EQ(listen(tcp, 1), 0);
  const int udp = BindLoopback(SOCK_DGRAM, &udp_port);
  ASSERT_GE(tcp, 0);
  ASSERT_GE(udp, 0);
  // This process's own sockets are never a holder.
  EXPECT_TRUE(FindPortHolders({{false, tcp_port}, {true, udp_port}}).empty());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child keeps copies, then this process lets go of its own.
    close(ready[0]);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(tcp);
  close(udp);
  const std::vector<PortHolder> holders = FindPortHolders({{false, tcp_port}, {true, udp_port}});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].uid, getuid());
  EXPECT_THAT(holders[0].pids, ::testing::ElementsAre(child));
  EXPECT_THAT(holders[0].tcp_ports, ::testing::ElementsAre(tcp_port));
  EXPECT_THAT(holders[0].udp_ports, ::testing::ElementsAre(udp_port));
  const std::string said = DescribePortHolders(holders);
  EXPECT_THAT(said, HasSubstr(absl::StrCat("uid ", getuid(), " pid ", child)));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("tcp ", tcp_port)));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("udp ", udp_port)));
}

TEST(PortHoldersTest, FoldsConsecutivePorts) {
  EXPECT_EQ(FoldPorts({18000, 18001, 18002, 18004, 18999}), "18000-18002, 18004, 18999");
  EXPECT_EQ(FoldPorts({}), "");
}

}  // namespace
}  // namespace leash::controlplane
