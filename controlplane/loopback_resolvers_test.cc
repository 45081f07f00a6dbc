// The loopback resolvers status shows, from socket-table text as this machine's kernel prints
// it; //test/proxy:dns_filter_netns_test reads the real tables of a namespace.
#include "controlplane/loopback_resolvers.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::ElementsAre;

engine::IpAddress Addr(const char* text) { return *engine::ParseIpAddress(text); }

// systemd-resolved's two stub listeners, a dnsmasq on every address, a TCP connection to
// port 53 (not a listener) and a listener on another port.
constexpr char kTcp[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode\n"
    "   0: 3500007F:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000   991        0 "
    "1 1 0000000000000000 100 0 0 10 0\n"
    "   1: 3600007F:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000   991        0 "
    "2 1 0000000000000000 100 0 0 10 0\n"
    "   2: 0100007F:9C40 3600007F:0035 01 00000000:00000000 00:00000000 00000000  1000        0 "
    "3 1 0000000000000000 20 4 30 10 -1\n"
    "   3: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "4 1 0000000000000000 100 0 0 10 0\n";
constexpr char kUdp6[] =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n"
    "  10: 00000000000000000000000001000000:0035 00000000000000000000000000000000:0000 07 "
    "00000000:00000000 00:00000000 00000000   0        0 5 2 0000000000000000 0\n"
    "  11: 00000000000000000000000000000000:0035 00000000000000000000000000000000:0000 07 "
    "00000000:00000000 00:00000000 00000000   0        0 6 2 0000000000000000 0\n"
    "  12: 0000000000000000FFFF00000100007F:0035 00000000000000000000000000000000:0000 07 "
    "00000000:00000000 00:00000000 00000000   0        0 7 2 0000000000000000 0\n";

TEST(LoopbackResolvers, Port53SocketsAreTcpListenersAndUnconnectedUdp) {
  EXPECT_THAT(Port53Sockets(kTcp, /*tcp=*/true),
              ElementsAre(Addr("127.0.0.53"), Addr("127.0.0.54")));
  EXPECT_THAT(Port53Sockets(kUdp6, /*tcp=*/false),
              ElementsAre(Addr("::1"), Addr("::"), Addr("::ffff:127.0.0.1")));
  EXPECT_THAT(Port53Sockets("garbage\n\n1: zz:35 00:00 0A", true), ElementsAre());
}

TEST(LoopbackResolvers, MergedByAddressResolvConfsLoopbackOnesFirst) {
  const std::vector<LoopbackResolver> merged = MergeLoopbackResolvers(
      {Addr("10.0.0.53"), Addr("127.0.0.53")}, Port53Sockets(kUdp6, false),
      Port53Sockets(kTcp, true));
  std::vector<std::string> described;
  for (const LoopbackResolver& r : merged) described.push_back(DescribeLoopbackResolver(r));
  EXPECT_THAT(described, ElementsAre("127.0.0.53 (resolv.conf; tcp)", "::1 (udp)",
                                     ":: (every address; udp)", "127.0.0.1 (udp)",
                                     "127.0.0.54 (tcp)"));
  EXPECT_THAT(MergeLoopbackResolvers({Addr("127.0.0.53")}, {}, {}).front().in_resolv_conf, true);
  EXPECT_EQ(DescribeLoopbackResolver(MergeLoopbackResolvers({Addr("127.0.0.53")}, {}, {}).front()),
            "127.0.0.53 (resolv.conf; nothing listening)");
}

}  // namespace
}  // namespace leash::controlplane
