#include "proxy/destination_guard.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/network_entry.h"
#include "gtest/gtest.h"

namespace leash::proxy {
namespace {

using engine::IpAddress;

IpAddress Ip(const std::string& text) {
  std::optional<IpAddress> parsed = engine::ParseIpAddress(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(IpAddress{});
}

struct Case {
  const char* address;
  GuardedRange range;
  const char* carried;  // the IPv4 address classified, or ""
};

// This host: a public address on an interface, an IPv6 one, and a private one.
const std::vector<IpAddress>& Host() {
  static const std::vector<IpAddress>* const host =
      new std::vector<IpAddress>{Ip("203.0.113.5"), Ip("2001:db8:5::5"), Ip("10.9.9.9")};
  return *host;
}

TEST(DestinationGuardTest, ClassifiesEveryRangeInEveryForm) {
  const std::vector<Case> cases = {
      // Public, including the documentation ranges the test hosts live on.
      {"192.0.2.11", GuardedRange::kPublic, ""},
      {"198.51.100.7", GuardedRange::kPublic, ""},
      {"203.0.113.9", GuardedRange::kPublic, ""},
      {"2001:db8::11", GuardedRange::kPublic, ""},
      {"8.8.8.8", GuardedRange::kPublic, ""},
      {"2606:4700::1111", GuardedRange::kPublic, ""},
      {"::ffff:192.0.2.11", GuardedRange::kPublic, ""},
      {"172.15.255.255", GuardedRange::kPublic, ""},   // just below 172.16/12
      {"172.32.0.0", GuardedRange::kPublic, ""},       // just above
      {"100.63.255.255", GuardedRange::kPublic, ""},   // just below 100.64/10
      {"100.128.0.0", GuardedRange::kPublic, ""},      // just above
      {"169.253.255.255", GuardedRange::kPublic, ""},
      {"223.255.255.255", GuardedRange::kPublic, ""},
      {"64:ff9b::808:808", GuardedRange::kPublic, ""},  // NAT64 of 8.8.8.8
      {"2002:808:808::1", GuardedRange::kPublic, ""},   // 6to4 of 8.8.8.8
      {"fbff:ffff::1", GuardedRange::kPublic, ""},      // just below fc00::/7
      // Unspecified.
      {"0.0.0.0", GuardedRange::kUnspecified, ""},
      {"0.1.2.3", GuardedRange::kUnspecified, ""},
      {"::", GuardedRange::kUnspecified, ""},
      {"::ffff:0.0.0.0", GuardedRange::kUnspecified, "0.0.0.0"},
      // Loopback.
      {"127.0.0.1", GuardedRange::kLoopback, ""},
      {"127.255.255.254", GuardedRange::kLoopback, ""},
      {"::1", GuardedRange::kLoopback, ""},
      {"::ffff:127.0.0.1", GuardedRange::kLoopback, "127.0.0.1"},
      {"::127.0.0.1", GuardedRange::kLoopback, "127.0.0.1"},
      {"64:ff9b::7f00:1", GuardedRange::kLoopback, "127.0.0.1"},
      {"2002:7f00:1::", GuardedRange::kLoopback, "127.0.0.1"},
      // Metadata before link-local.
      {"169.254.169.254", GuardedRange::kMetadata, ""},
      {"fd00:ec2::254", GuardedRange::kMetadata, ""},
      {"::ffff:169.254.169.254", GuardedRange::kMetadata, "169.254.169.254"},
      {"64:ff9b::a9fe:a9fe", GuardedRange::kMetadata, "169.254.169.254"},
      {"2002:a9fe:a9fe::", GuardedRange::kMetadata, "169.254.169.254"},
      // Link-local.
      {"169.254.0.1", GuardedRange::kLinkLocal, ""},
      {"169.254.169.252", GuardedRange::kLinkLocal, ""},
      {"fe80::1", GuardedRange::kLinkLocal, ""},
      {"febf::1", GuardedRange::kLinkLocal, ""},
      {"::ffff:169.254.1.1", GuardedRange::kLinkLocal, "169.254.1.1"},
      // Private.
      {"10.0.0.1", GuardedRange::kPrivate, ""},
      {"10.255.255.255", GuardedRange::kPrivate, ""},
      {"172.16.0.1", GuardedRange::kPrivate, ""},
      {"172.31.255.255", GuardedRange::kPrivate, ""},
      {"192.168.1.1", GuardedRange::kPrivate, ""},
      {"fc00::1", GuardedRange::kPrivate, ""},
      {"fd12:3456::1", GuardedRange::kPrivate, ""},
      {"fd00:ec2::252", GuardedRange::kPrivate, ""},  // beside the metadata addresses
      {"fec0::1", GuardedRange::kPrivate, ""},
      {"64:ff9b:1::a00:1", GuardedRange::kPrivate, ""},
      {"::ffff:10.1.2.3", GuardedRange::kPrivate, "10.1.2.3"},
      {"::ffff:172.16.0.1", GuardedRange::kPrivate, "172.16.0.1"},
      {"::ffff:192.168.0.1", GuardedRange::kPrivate, "192.168.0.1"},
      {"64:ff9b::a01:203", GuardedRange::kPrivate, "10.1.2.3"},
      {"2002:c0a8:101::1", GuardedRange::kPrivate, "192.168.1.1"},
      // Shared address space.
      {"100.64.0.1", GuardedRange::kSharedSpace, ""},
      {"100.127.255.255", GuardedRange::kSharedSpace, ""},
      {"100.100.100.201", GuardedRange::kSharedSpace, ""},  // beside a cloud's metadata
      {"::ffff:100.64.0.1", GuardedRange::kSharedSpace, "100.64.0.1"},
      // Multicast, reserved, broadcast.
      {"224.0.0.1", GuardedRange::kMulticast, ""},
      {"239.255.255.250", GuardedRange::kMulticast, ""},
      {"ff02::1", GuardedRange::kMulticast, ""},
      {"::ffff:224.0.0.251", GuardedRange::kMulticast, "224.0.0.251"},
      {"240.0.0.1", GuardedRange::kReserved, ""},
      {"255.255.255.255", GuardedRange::kReserved, ""},
      {"192.0.0.192", GuardedRange::kReserved, ""},
      // This host's own addresses, in any form; a private one is named by its range.
      {"203.0.113.5", GuardedRange::kThisHost, ""},
      {"::ffff:203.0.113.5", GuardedRange::kThisHost, ""},
      {"64:ff9b::cb00:7105", GuardedRange::kThisHost, "203.0.113.5"},
      {"2001:db8:5::5", GuardedRange::kThisHost, ""},
      {"10.9.9.9", GuardedRange::kPrivate, ""},
  };
  for (const Case& c : cases) {
    const Classification found = ClassifyDestination(Ip(c.address), Host());
    EXPECT_EQ(found.range, c.range) << c.address << " classified as " << found.range_text;
    EXPECT_EQ(found.range == GuardedRange::kPublic, found.range_text.empty()) << c.address;
    EXPECT_EQ(found.carried_v4 ? engine::FormatIpAddress(*found.carried_v4) : "", c.carried)
        << c.address;
  }
}

TEST(DestinationGuardTest, APublicAddressPasses) {
  EXPECT_EQ(GuardNameDestination(Ip("192.0.2.11"), false, Host()), std::nullopt);
  EXPECT_EQ(GuardNameDestination(Ip("2001:db8::11"), false, {}), std::nullopt);
}

TEST(DestinationGuardTest, ARefusalNamesTheAddressItsRangeAndTheEntryToAdd) {
  const std::optional<std::string> metadata =
      GuardNameDestination(Ip("169.254.169.254"), false, Host());
  ASSERT_TRUE(metadata.has_value());
  EXPECT_EQ(*metadata,
            "169.254.169.254 is the cloud metadata address, where a name never leads on its own; "
            "an IP allow entry of this subject allows it: add '169.254.169.254/32' to its "
            "network.allow (leash net allow 169.254.169.254/32)");
  const std::optional<std::string> mapped =
      GuardNameDestination(Ip("::ffff:10.1.2.3"), false, Host());
  ASSERT_TRUE(mapped.has_value());
  EXPECT_TRUE(absl::StartsWith(*mapped, "::ffff:10.1.2.3 carries 10.1.2.3, in private 10.0.0.0/8"))
      << *mapped;
  // The matcher reads a mapped address as the IPv4 one: that is the entry to add.
  EXPECT_TRUE(absl::StrContains(*mapped, "leash net allow 10.1.2.3/32")) << *mapped;
  const std::optional<std::string> v6 = GuardNameDestination(Ip("fd00:ec2::254"), false, Host());
  ASSERT_TRUE(v6.has_value());
  EXPECT_TRUE(absl::StrContains(*v6, "leash net allow fd00:ec2::254/128")) << *v6;
  const std::optional<std::string> own = GuardNameDestination(Ip("203.0.113.5"), false, Host());
  ASSERT_TRUE(own.has_value());
  EXPECT_TRUE(absl::StartsWith(*own, "203.0.113.5 is an address of this host's own interfaces"))
      << *own;
  const std::optional<std::string> nat64 =
      GuardNameDestination(Ip("64:ff9b::7f00:1"), false, Host());
  ASSERT_TRUE(nat64.has_value());
  EXPECT_TRUE(absl::StrContains(*nat64, "leash net allow 64:ff9b::7f00:1/128")) << *nat64;
}

TEST(DestinationGuardTest, AnExplicitAddressEntryAllowsAnyRange) {
  for (const char* address :
       {"127.0.0.1", "169.254.169.254", "10.1.2.3", "::ffff:10.1.2.3", "203.0.113.5", "::"}) {
    EXPECT_EQ(GuardNameDestination(Ip(address), /*allowed_by_address_entry=*/true, Host()),
              std::nullopt)
        << address;
    EXPECT_NE(GuardNameDestination(Ip(address), /*allowed_by_address_entry=*/false, Host()),
              std::nullopt)
        << address;
  }
}

TEST(DestinationGuardTest, ExactEntriesParseAsEntriesOfOneAddress) {
  EXPECT_EQ(ExactAddressEntry(Ip("10.1.2.3")), "10.1.2.3/32");
  EXPECT_EQ(ExactAddressEntry(Ip("::ffff:10.1.2.3")), "10.1.2.3/32");
  EXPECT_EQ(ExactAddressEntry(Ip("fe80::1")), "fe80::1/128");
  for (const char* address : {"10.1.2.3", "::ffff:10.1.2.3", "fd00:ec2::254"}) {
    const absl::StatusOr<engine::NetworkEntry> entry =
        engine::ParseNetworkEntry(ExactAddressEntry(Ip(address)));
    ASSERT_TRUE(entry.ok()) << address << ": " << entry.status();
    EXPECT_EQ(entry->kind, engine::NetworkEntry::Kind::kNetwork);
    EXPECT_EQ(entry->network, engine::UnmapV4(Ip(address)));
    EXPECT_EQ(entry->prefix_len, entry->network.bit_length());
  }
}

// Every documented instance-metadata and platform address of the large clouds is guarded, named
// for what it is, in every IPv6 form that carries it; an explicit IP entry still allows each.
TEST(DestinationGuardTest, EveryCloudMetadataAddressIsGuardedUnlessAnIpEntryNamesIt) {
  struct Case {
    const char* address;
    const char* text;
  };
  const std::vector<Case> cases = {
      {"169.254.169.254", "the cloud metadata address"},  // AWS, GCP, Azure, OCI, DO, IBM
      {"fd00:ec2::254", "the cloud metadata address"},    // AWS over IPv6
      {"169.254.169.253", "the AWS VPC DNS resolver address"},
      {"fd00:ec2::253", "the AWS VPC DNS resolver address"},
      {"169.254.169.123", "the Amazon Time Sync Service address"},
      {"fd00:ec2::123", "the Amazon Time Sync Service address"},
      {"169.254.170.2", "the Amazon ECS task metadata and credentials address"},
      {"168.63.129.16", "Azure's platform address (WireServer)"},  // public space
      {"100.100.100.200", "the Alibaba Cloud metadata address"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.address);
    const IpAddress address = Ip(c.address);
    const Classification found = ClassifyDestination(address, {});
    EXPECT_EQ(found.range, GuardedRange::kMetadata) << found.range_text;
    EXPECT_TRUE(absl::StartsWith(found.range_text, c.text)) << found.range_text;
    const std::optional<std::string> refused = GuardNameDestination(address, false, {});
    ASSERT_TRUE(refused.has_value());
    EXPECT_TRUE(absl::StartsWith(*refused, absl::StrCat(c.address, " is ", c.text))) << *refused;
    EXPECT_TRUE(absl::StrContains(*refused, "leash net allow " + ExactAddressEntry(address)))
        << *refused;
    EXPECT_EQ(GuardNameDestination(address, /*allowed_by_address_entry=*/true, {}), std::nullopt);
    if (address.family == IpAddress::Family::kV4) {
      for (const std::string& form :
           {absl::StrCat("::ffff:", c.address), absl::StrCat("64:ff9b::", c.address)}) {
        const Classification carried = ClassifyDestination(Ip(form), {});
        EXPECT_EQ(carried.range, GuardedRange::kMetadata) << form;
        ASSERT_TRUE(carried.carried_v4.has_value()) << form;
        EXPECT_EQ(engine::FormatIpAddress(*carried.carried_v4), c.address);
      }
    }
  }
  // Public addresses beside them stay public.
  for (const char* address : {"168.63.129.15", "168.63.129.17", "168.63.130.16"}) {
    EXPECT_EQ(ClassifyDestination(Ip(address), {}).range, GuardedRange::kPublic) << address;
  }
}

// "This host" is what the kernel routes locally: each route kind, for the address itself and
// for the IPv4 address an IPv6 form carries.
TEST(DestinationGuardTest, ClassifiesByTheKernelsRoutePerRouteKind) {
  struct Case {
    RouteKind kind;
    GuardedRange range;
    const char* text;  // the start of the range text, or "" when public
  };
  const std::vector<Case> cases = {
      {RouteKind::kLocal, GuardedRange::kThisHost,
       "routed to this host (the kernel's route for it is local)"},
      {RouteKind::kBroadcast, GuardedRange::kThisHost, "a broadcast address of this host's"},
      {RouteKind::kAnycast, GuardedRange::kThisHost, "an anycast address this host answers for"},
      {RouteKind::kMulticast, GuardedRange::kMulticast, "routed as multicast"},
      {RouteKind::kRemote, GuardedRange::kPublic, ""},
      {RouteKind::kNoRoute, GuardedRange::kPublic, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(RouteKindName(c.kind));
    for (const char* text : {"192.0.2.225", "2001:db8:ab::5"}) {
      const IpAddress address = Ip(text);
      ASSERT_EQ(RoutedForms(address).size(), 1u);
      const RoutedAddress routed[] = {{address, c.kind}};
      const Classification found = ClassifyDestination(address, Host(), routed);
      EXPECT_EQ(found.range, c.range) << text;
      EXPECT_TRUE(absl::StartsWith(found.range_text, c.text)) << text << ": " << found.range_text;
      EXPECT_FALSE(found.carried_v4.has_value()) << text;
      // Without the route the same address is public: the interface list does not hold it.
      EXPECT_EQ(ClassifyDestination(address, Host()).range, GuardedRange::kPublic) << text;
    }
    // An IPv4-mapped address is routed as the IPv4 address it is.
    const std::vector<IpAddress> mapped = RoutedForms(Ip("::ffff:192.0.2.225"));
    ASSERT_EQ(mapped.size(), 1u);
    EXPECT_EQ(mapped.front(), Ip("192.0.2.225"));
    const RoutedAddress mapped_routes[] = {{Ip("192.0.2.225"), c.kind}};
    EXPECT_EQ(ClassifyDestination(Ip("::ffff:192.0.2.225"), Host(), mapped_routes).range, c.range);
    // NAT64 and 6to4 forms: the IPv6 address is routed off the host, the IPv4 one it carries
    // (which a translator here would deliver to) by the kind under test.
    for (const char* form : {"64:ff9b::c000:2e1", "2002:c000:2e1::1"}) {
      const std::vector<IpAddress> forms = RoutedForms(Ip(form));
      ASSERT_EQ(forms.size(), 2u) << form;
      EXPECT_EQ(forms[1], Ip("192.0.2.225")) << form;
      const RoutedAddress routed[] = {{forms[0], RouteKind::kRemote}, {forms[1], c.kind}};
      const Classification found = ClassifyDestination(Ip(form), Host(), routed);
      EXPECT_EQ(found.range, c.range) << form;
      EXPECT_EQ(found.carried_v4.has_value(), c.range != GuardedRange::kPublic) << form;
    }
  }
  const RoutedAddress local[] = {{Ip("192.0.2.225"), RouteKind::kLocal}};
  const std::optional<std::string> refused =
      GuardNameDestination(Ip("192.0.2.225"), false, Host(), local);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(*refused,
            "192.0.2.225 is routed to this host (the kernel's route for it is local), where a "
            "name never leads on its own; an IP allow entry of this subject allows it: add "
            "'192.0.2.225/32' to its network.allow (leash net allow 192.0.2.225/32)");
  EXPECT_EQ(GuardNameDestination(Ip("192.0.2.225"), /*allowed_by_address_entry=*/true, Host(),
                                 local),
            std::nullopt);
}

}  // namespace
}  // namespace leash::proxy
