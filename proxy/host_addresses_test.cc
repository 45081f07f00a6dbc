// The host-address reader against the kernel, as root in a network namespace made for the
// test: an address added or removed is in (or out of) the very next answer, with no wait.
#include "proxy/host_addresses.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"

namespace leash::proxy {
namespace {

bool Has(absl::Span<const engine::IpAddress> list, const char* text) {
  return std::find(list.begin(), list.end(), *engine::ParseIpAddress(text)) != list.end();
}

TEST(HostAddressesTest, AnAddressChangeIsInTheNextAnswer) {
  LEASH_REQUIRE_ROOT();
  absl::StatusOr<std::unique_ptr<leash::testing::NetNamespace>> ns =
      leash::testing::NetNamespace::Create();
  ASSERT_TRUE(ns.ok()) << ns.status();
  ASSERT_TRUE((*ns)->AddVethPair({"192.0.2.10/24", "2001:db8::10/64"}, {"192.0.2.11/24"}).ok());
  std::unique_ptr<HostAddresses> host;
  {
    absl::StatusOr<leash::testing::NetNamespace::Entered> entered = (*ns)->Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    absl::StatusOr<std::unique_ptr<HostAddresses>> opened = HostAddresses::Open();
    ASSERT_TRUE(opened.ok()) << opened.status();
    host = std::move(*opened);
  }
  // The event socket belongs to the namespace it was opened in, but getifaddrs reads the
  // calling thread's: each answer is asked for from inside (leash-proxy lives in one).
  auto current = [&]() -> std::vector<engine::IpAddress> {
    absl::StatusOr<leash::testing::NetNamespace::Entered> entered = (*ns)->Enter();
    EXPECT_TRUE(entered.ok());
    absl::StatusOr<absl::Span<const engine::IpAddress>> list = host->Current();
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? std::vector<engine::IpAddress>(list->begin(), list->end())
                     : std::vector<engine::IpAddress>{};
  };
  std::vector<engine::IpAddress> first = current();
  EXPECT_TRUE(Has(first, "127.0.0.1"));
  EXPECT_TRUE(Has(first, "192.0.2.10"));
  EXPECT_TRUE(Has(first, "192.0.2.11"));  // both veth ends are this namespace's
  EXPECT_TRUE(Has(first, "2001:db8::10"));
  EXPECT_FALSE(Has(first, "198.51.100.77"));
  const int reads = host->reads();
  // Nothing changed: no reread.
  current();
  EXPECT_EQ(host->reads(), reads);

  ASSERT_TRUE(leash::testing::RunOk((*ns)->Exec({"ip", "addr", "add", "198.51.100.77/32", "dev", "v0"})).ok());
  ASSERT_TRUE(leash::testing::RunOk((*ns)->Exec({"ip", "addr", "add", "2001:db8:77::77/128", "dev", "v0", "nodad"})).ok());
  std::vector<engine::IpAddress> added = current();
  EXPECT_TRUE(Has(added, "198.51.100.77"));
  EXPECT_TRUE(Has(added, "2001:db8:77::77"));
  EXPECT_GT(host->reads(), reads);

  ASSERT_TRUE(leash::testing::RunOk((*ns)->Exec({"ip", "addr", "del", "198.51.100.77/32", "dev", "v0"})).ok());
  EXPECT_FALSE(Has(current(), "198.51.100.77"));
}

}  // namespace
}  // namespace leash::proxy
