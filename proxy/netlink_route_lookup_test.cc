// The route lookup against the kernel, as root in a network namespace made for the test: every
// route kind the destination guard reads comes back as that kind, the lookup carries the port
// (a policy rule on the destination port is applied as to the real connection), and a route
// the kernel changed is in the very next answer, with no wait.
#include "proxy/netlink_route_lookup.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"

namespace leash::proxy {
namespace {

class NetlinkRouteLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEASH_REQUIRE_ROOT();
    absl::StatusOr<std::unique_ptr<leash::testing::NetNamespace>> ns =
        leash::testing::NetNamespace::Create();
    ASSERT_TRUE(ns.ok()) << ns.status();
    ns_ = std::move(*ns);
    ASSERT_TRUE(ns_->AddVethPair({"192.0.2.10/24", "2001:db8::10/64"}, {"192.0.2.11/24"}).ok());
    absl::StatusOr<leash::testing::NetNamespace::Entered> entered = ns_->Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    absl::StatusOr<std::unique_ptr<NetlinkRouteLookup>> opened = NetlinkRouteLookup::Open();
    ASSERT_TRUE(opened.ok()) << opened.status();
    routes_ = std::move(*opened);
  }

  void Ip(const std::vector<std::string>& argv) {
    std::vector<std::string> full = {"ip"};
    full.insert(full.end(), argv.begin(), argv.end());
    absl::StatusOr<std::string> ran = leash::testing::RunOk(ns_->Exec(full));
    ASSERT_TRUE(ran.ok()) << ran.status();
  }

  absl::StatusOr<RouteKind> Lookup(const char* address, uint16_t port = 443) {
    return routes_->Lookup(*engine::ParseIpAddress(address), port);
  }

  std::unique_ptr<leash::testing::NetNamespace> ns_;
  std::unique_ptr<NetlinkRouteLookup> routes_;
};

TEST_F(NetlinkRouteLookupTest, EachRouteKindComesBackAsThatKind) {
  // AnyIP: whole ranges delivered here through a route to lo, on no interface.
  Ip({"route", "add", "local", "198.51.100.0/24", "dev", "lo"});
  Ip({"-6", "route", "add", "local", "2001:db8:ab::/64", "dev", "lo"});
  Ip({"route", "add", "224.0.0.0/4", "dev", "v0"});
  Ip({"route", "add", "unreachable", "203.0.113.0/25"});
  Ip({"route", "add", "prohibit", "203.0.113.128/26"});
  Ip({"route", "add", "blackhole", "203.0.113.192/26"});
  Ip({"-6", "route", "add", "unreachable", "2001:db8:dead::/48"});
  // The subnet-router anycast address of 2001:db8::/64 exists while v0 forwards.
  ASSERT_TRUE(leash::testing::RunOk(ns_->Exec({"sysctl", "-qw", "net.ipv6.conf.v0.forwarding=1"})).ok());

  struct Case {
    const char* address;
    RouteKind kind;
  };
  const std::vector<Case> cases = {
      {"127.0.0.1", RouteKind::kLocal},
      {"::1", RouteKind::kLocal},
      {"192.0.2.10", RouteKind::kLocal},         // an interface address
      {"::ffff:192.0.2.10", RouteKind::kLocal},  // looked up as IPv4, as it connects
      {"198.51.100.7", RouteKind::kLocal},       // AnyIP v4
      {"::ffff:198.51.100.7", RouteKind::kLocal},
      {"2001:db8:ab::5", RouteKind::kLocal},     // AnyIP v6
      {"192.0.2.12", RouteKind::kRemote},        // on the link
      {"2001:db8::12", RouteKind::kRemote},
      {"192.0.2.255", RouteKind::kBroadcast},
      {"2001:db8::", RouteKind::kAnycast},
      {"224.0.0.1", RouteKind::kMulticast},
      {"ff02::1", RouteKind::kMulticast},
      {"203.0.113.1", RouteKind::kNoRoute},      // unreachable
      {"203.0.113.129", RouteKind::kNoRoute},    // prohibit
      {"2001:db8:dead::1", RouteKind::kNoRoute},
      {"8.8.8.8", RouteKind::kNoRoute},          // no route at all
      {"2606:4700::1111", RouteKind::kNoRoute},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RouteKind> kind = Lookup(c.address);
    ASSERT_TRUE(kind.ok()) << c.address << ": " << kind.status();
    EXPECT_EQ(RouteKindName(*kind), RouteKindName(c.kind)) << c.address;
  }
  // A blackhole answers EINVAL, which a bad request answers too: not read as either.
  absl::StatusOr<RouteKind> blackhole = Lookup("203.0.113.200");
  ASSERT_FALSE(blackhole.ok());
  EXPECT_NE(blackhole.status().message().find("RTM_GETROUTE"), std::string::npos)
      << blackhole.status();
}

TEST_F(NetlinkRouteLookupTest, ARuleOnTheDestinationPortIsAppliedAsToTheConnection) {
  // TCP to port 9999, wherever it is addressed, is delivered here.
  Ip({"rule", "add", "ipproto", "tcp", "dport", "9999", "lookup", "100"});
  Ip({"route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", "100"});
  absl::StatusOr<RouteKind> other = Lookup("192.0.2.12", 80);
  absl::StatusOr<RouteKind> ruled = Lookup("192.0.2.12", 9999);
  ASSERT_TRUE(other.ok() && ruled.ok()) << other.status() << ruled.status();
  EXPECT_EQ(*other, RouteKind::kRemote);
  EXPECT_EQ(*ruled, RouteKind::kLocal);
}

TEST_F(NetlinkRouteLookupTest, AnAnswerIsCachedUntilTheKernelChangesARoute) {
  ASSERT_EQ(*Lookup("198.51.100.7"), RouteKind::kNoRoute);
  const int asked = routes_->kernel_lookups();
  ASSERT_EQ(*Lookup("198.51.100.7"), RouteKind::kNoRoute);
  EXPECT_EQ(routes_->kernel_lookups(), asked);  // nothing changed: not asked again

  Ip({"route", "add", "local", "198.51.100.0/24", "dev", "lo"});
  EXPECT_EQ(*Lookup("198.51.100.7"), RouteKind::kLocal);  // the very next answer
  EXPECT_GT(routes_->kernel_lookups(), asked);
  EXPECT_GE(routes_->invalidations(), 1);

  // An address added to an interface brings its local route with it.
  Ip({"addr", "add", "203.0.113.50/32", "dev", "v0"});
  EXPECT_EQ(*Lookup("203.0.113.50"), RouteKind::kLocal);
  Ip({"addr", "del", "203.0.113.50/32", "dev", "v0"});
  EXPECT_EQ(*Lookup("203.0.113.50"), RouteKind::kNoRoute);

  // Links going down take their routes (both ends of the pair are in this namespace and on
  // 192.0.2.0/24; IPv4 reports no route deletion for routes a link takes with it).
  ASSERT_EQ(*Lookup("192.0.2.12"), RouteKind::kRemote);
  Ip({"link", "set", "v0", "down"});
  Ip({"link", "set", "v1", "down"});
  EXPECT_EQ(*Lookup("192.0.2.12"), RouteKind::kNoRoute);
}

}  // namespace
}  // namespace leash::proxy
