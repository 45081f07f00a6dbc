#include "proxy/dns_answer_cache.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::proxy {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

engine::IpAddress Ip(const char* text) { return *engine::ParseIpAddress(text); }
constexpr auto kV4 = engine::IpAddress::Family::kV4;
constexpr auto kV6 = engine::IpAddress::Family::kV6;

TEST(DnsAnswerCache, GivesEachSubjectOnlyWhatItWasToldWithinTheTtl) {
  DnsAnswerCache cache;
  const absl::Time now = absl::FromUnixSeconds(1000);
  cache.Store(1001, "github.com", kV4, {Ip("192.0.2.10")}, now + absl::Seconds(30));
  cache.Store(1001, "github.com", kV6, {Ip("2001:db8::10")}, now + absl::Seconds(5));
  EXPECT_THAT(cache.Lookup(1001, "github.com", now), ElementsAre(Ip("2001:db8::10"), Ip("192.0.2.10")));
  EXPECT_THAT(cache.Lookup(1001, "github.com", now + absl::Seconds(10)), ElementsAre(Ip("192.0.2.10")));
  EXPECT_THAT(cache.Lookup(1001, "github.com", now + absl::Seconds(30)), IsEmpty());
  // Another subject asked nothing: it gets nothing of this one's.
  EXPECT_THAT(cache.Lookup(1002, "github.com", now), IsEmpty());
  // A later answer replaces the earlier one of its family.
  cache.Store(1001, "github.com", kV4, {Ip("192.0.2.20")}, now + absl::Seconds(30));
  EXPECT_THAT(cache.Lookup(1001, "github.com", now + absl::Seconds(10)), ElementsAre(Ip("192.0.2.20")));
}

TEST(DnsAnswerCache, AFullSubjectMakesRoomInItsOwnNamesOnly) {
  DnsAnswerCache cache(/*max_names_per_subject=*/2);
  const absl::Time later = absl::Now() + absl::Hours(1);
  cache.Store(2, "other.test", kV4, {Ip("192.0.2.2")}, later);
  cache.Store(1, "a.test", kV4, {Ip("192.0.2.1")}, later + absl::Seconds(1));
  cache.Store(1, "b.test", kV4, {Ip("192.0.2.1")}, later);
  cache.Store(1, "c.test", kV4, {Ip("192.0.2.1")}, later + absl::Seconds(2));
  EXPECT_EQ(cache.size(1), 2u);
  // The one that would have expired first went.
  EXPECT_THAT(cache.Lookup(1, "b.test", absl::Now()), IsEmpty());
  EXPECT_THAT(cache.Lookup(1, "c.test", absl::Now()), ElementsAre(Ip("192.0.2.1")));
  EXPECT_THAT(cache.Lookup(2, "other.test", absl::Now()), ElementsAre(Ip("192.0.2.2")));
}

}  // namespace
}  // namespace leash::proxy
