#include "engine/network_entry.h"
#include "engine/reserved_ports.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;

struct ValidCase {
  const char* name;
  const char* entry;
  NetworkEntry::Kind kind;
  const char* host_or_network;  // host for names, canonical address for networks
  int prefix_len;
  uint16_t port;
};

class ValidNetworkEntry : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidNetworkEntry, Parses) {
  const ValidCase& c = GetParam();
  absl::StatusOr<NetworkEntry> entry = ParseNetworkEntry(c.entry);
  ASSERT_TRUE(entry.ok()) << c.entry << ": " << entry.status();
  EXPECT_EQ(entry->kind, c.kind);
  EXPECT_EQ(entry->port, c.port);
  if (c.kind == NetworkEntry::Kind::kNetwork) {
    EXPECT_EQ(FormatIpAddress(entry->network), c.host_or_network);
    EXPECT_EQ(entry->prefix_len, c.prefix_len);
  } else {
    EXPECT_EQ(entry->host, c.host_or_network);
  }
}

using K = NetworkEntry::Kind;
INSTANTIATE_TEST_SUITE_P(
    Grammar, ValidNetworkEntry,
    ::testing::Values(
        ValidCase{"Domain", "github.com", K::kDomain, "github.com", 0, 0},
        ValidCase{"DomainUppercaseIsLowered", "GitHub.COM", K::kDomain, "github.com", 0, 0},
        ValidCase{"DomainTrailingDotDropped", "github.com.", K::kDomain, "github.com", 0, 0},
        ValidCase{"DomainWithPort", "github.com:443", K::kDomain, "github.com", 0, 443},
        ValidCase{"SingleLabelHost", "localhost", K::kDomain, "localhost", 0, 0},
        ValidCase{"UnderscoreLabel", "_dmarc.example.com", K::kDomain, "_dmarc.example.com", 0,
                  0},
        ValidCase{"Wildcard", "*.github.com", K::kWildcard, "github.com", 0, 0},
        ValidCase{"WildcardWithPort", "*.github.com:8443", K::kWildcard, "github.com", 0, 8443},
        ValidCase{"Ipv4Address", "192.0.2.7", K::kNetwork, "192.0.2.7", 32, 0},
        ValidCase{"Ipv4AddressWithPort", "192.0.2.7:22", K::kNetwork, "192.0.2.7", 32, 22},
        ValidCase{"Ipv4Cidr", "10.0.0.0/8", K::kNetwork, "10.0.0.0", 8, 0},
        ValidCase{"Ipv4CidrWithPort", "10.0.0.0/8:443", K::kNetwork, "10.0.0.0", 8, 443},
        ValidCase{"Ipv4ZeroPrefixIsEverything", "0.0.0.0/0", K::kNetwork, "0.0.0.0", 0, 0},
        ValidCase{"Ipv6Bare", "2001:db8::1", K::kNetwork, "2001:db8::1", 128, 0},
        ValidCase{"Ipv6BareCidr", "2001:db8::/32", K::kNetwork, "2001:db8::", 32, 0},
        ValidCase{"Ipv6Bracketed", "[2001:db8::1]", K::kNetwork, "2001:db8::1", 128, 0},
        ValidCase{"Ipv6BracketedWithPort", "[2001:db8::1]:443", K::kNetwork, "2001:db8::1", 128,
                  443},
        ValidCase{"Ipv6BracketedCidrWithPort", "[2001:db8::/32]:443", K::kNetwork, "2001:db8::",
                  32, 443},
        ValidCase{"PortBounds", "example.com:65535", K::kDomain, "example.com", 0, 65535}),
    [](const auto& info) { return std::string(info.param.name); });

struct InertCase {
  const char* name;
  const char* entry;
  const char* reason;  // a fragment the reason must contain
};

class InertNetworkEntry : public ::testing::TestWithParam<InertCase> {};

TEST_P(InertNetworkEntry, IsRefusedWithReason) {
  const InertCase& c = GetParam();
  absl::StatusOr<NetworkEntry> entry = ParseNetworkEntry(c.entry);
  ASSERT_FALSE(entry.ok()) << c.entry << " parsed";
  EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(entry.status().message()), HasSubstr(c.reason)) << c.entry;
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, InertNetworkEntry,
    ::testing::Values(
        InertCase{"Empty", "", "empty"},
        InertCase{"Url", "http://github.com", "a URL"},
        InertCase{"HttpsUrlWithPath", "https://github.com/org", "a URL"},
        InertCase{"HostSlashPath", "github.com/org", "contains a path"},
        InertCase{"UserAtHost", "git@github.com", "user@host"},
        InertCase{"InnerWhitespace", "git hub.com", "whitespace"},
        InertCase{"TrailingWhitespace", "github.com ", "whitespace"},
        InertCase{"NonLeadingStar", "api.*.github.com", "leading '*.'"},
        InertCase{"StarInsideLabel", "api*.github.com", "leading '*.'"},
        InertCase{"BareStar", "*", "every host"},
        InertCase{"LeadingDot", ".github.com", "leading '.'"},
        InertCase{"NonNumericPort", "github.com:https", "not a number"},
        InertCase{"PortZero", "github.com:0", "out of range"},
        InertCase{"PortTooLarge", "github.com:65536", "out of range"},
        InertCase{"NonAscii", "b\xc3\xbc" "cher.de", "non-ASCII"},
        InertCase{"EmptyLabel", "github..com", "empty label"},
        InertCase{"BadIpv4", "10.0.0.256", "not a valid IPv4"},
        InertCase{"CidrHostBitsSet", "10.0.0.1/8", "the network is 10.0.0.0/8"},
        InertCase{"CidrLengthTooLong", "10.0.0.0/33", "prefix length"},
        InertCase{"Ipv6WithPortNoBrackets", "2001:db8::1:443x", "[2001:db8::1]:443"},
        InertCase{"BracketedIpv4", "[192.0.2.1]:443", "brackets are for IPv6"},
        InertCase{"UnclosedBracket", "[2001:db8::1:443", "closing ']'"},
        InertCase{"JunkAfterBracket", "[2001:db8::1]443", "only :port"},
        InertCase{"HyphenEdgeLabel", "-github.com", "starts or ends with '-'"},
        InertCase{"BadCharacter", "git!hub.com", "not allowed"},
        InertCase{"PortWithoutHost", ":443", "no host"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ResolverEntry, AddressIsRenderable) {
  EXPECT_TRUE(ParseResolverEntry("192.0.2.53").ok());
  EXPECT_TRUE(ParseResolverEntry("2001:db8::53").ok());
}

TEST(ResolverEntry, NameIsInertBecauseNftCannotRenderIt) {
  absl::StatusOr<IpAddress> resolver = ParseResolverEntry("dns.google");
  ASSERT_FALSE(resolver.ok());
  EXPECT_THAT(std::string(resolver.status().message()), HasSubstr("nft renders a resolver"));
}

}  // namespace
TEST(LoopbackAddress, TheWholeLoopbackRangeOfBothFamiliesAndItsMappedSpelling) {
  auto loopback = [](const char* ip) { return IsLoopbackAddress(*ParseIpAddress(ip)); };
  EXPECT_TRUE(loopback("127.0.0.1"));
  EXPECT_TRUE(loopback("127.0.0.54"));
  EXPECT_TRUE(loopback("127.255.255.255"));
  EXPECT_TRUE(loopback("::1"));
  EXPECT_TRUE(loopback("::ffff:127.0.0.53"));
  EXPECT_FALSE(loopback("128.0.0.1"));
  EXPECT_FALSE(loopback("10.0.0.53"));
  EXPECT_FALSE(loopback("::2"));
  EXPECT_FALSE(loopback("::"));
  EXPECT_FALSE(loopback("0.0.0.0"));
  EXPECT_FALSE(loopback("::ffff:10.0.0.1"));
}

TEST(ReservedLoopbackPort, LoopbackAndUnspecifiedAddressesInTheRange) {
  auto reserved = [](const char* ip, uint16_t port) {
    return IsReservedLoopbackPort(*ParseIpAddress(ip), port);
  };
  EXPECT_TRUE(reserved("127.0.0.1", 18000));
  EXPECT_TRUE(reserved("127.9.9.9", 18999));
  EXPECT_TRUE(reserved("::1", 18443));
  EXPECT_TRUE(reserved("::ffff:127.0.0.1", 18001));
  // Linux connects an unspecified address to the local host.
  EXPECT_TRUE(reserved("0.0.0.0", 18001));
  EXPECT_TRUE(reserved("::", 18001));
  EXPECT_TRUE(reserved("::ffff:0.0.0.0", 18001));
  EXPECT_FALSE(reserved("127.0.0.1", 17999));
  EXPECT_FALSE(reserved("127.0.0.1", 19000));
  EXPECT_FALSE(reserved("10.0.0.1", 18001));
  EXPECT_FALSE(reserved("0.0.0.1", 18001));
  EXPECT_FALSE(reserved("::2", 18001));
}

}  // namespace leash::engine
