#include "controlplane/resolv_conf.h"

#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

TEST(ParseResolvConf, ReadsNameserversSkippingEverythingElse) {
  const auto resolvers = ParseResolvConf(
      "# generated\nsearch example.com\nnameserver 192.0.2.53\n  nameserver\t2001:db8::53 \n"
      "nameserver fe80::1%eth0\noptions edns0\n;nameserver 10.0.0.1\nnameserver\n");
  ASSERT_EQ(resolvers.size(), 2u);
  EXPECT_EQ(engine::FormatIpAddress(resolvers[0]), "192.0.2.53");
  EXPECT_EQ(engine::FormatIpAddress(resolvers[1]), "2001:db8::53");
}

TEST(HostResolvers, MissingFileIsNoResolvers) {
  auto resolvers = HostResolvers("/nonexistent/resolv.conf");
  ASSERT_TRUE(resolvers.ok());
  EXPECT_TRUE(resolvers->empty());
}

}  // namespace
}  // namespace leash::controlplane
