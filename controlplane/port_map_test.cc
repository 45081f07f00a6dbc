#include "controlplane/port_map.h"

#include <string>

#include "controlplane/netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

Account A(const std::string& name, uint32_t uid) { return Account{name, uid, uid}; }

TEST(PortMap, AssignsFromTheBottomOfTheRangeOnePerAccount) {
  PortMap map;
  EXPECT_EQ(*map.Assign(A("leash-iris", 1001)), 18000);
  EXPECT_EQ(*map.Assign(A("leash-vader", 1002)), 18001);
  EXPECT_EQ(*map.Assign(A("leash-iris", 1001)), 18000);  // for the account's life
  EXPECT_TRUE(map.dirty());
}

TEST(PortMap, NeverHandsOutTheSingleAgentPort) {
  PortMap map;
  for (int i = 0; i < 500; ++i) {
    const uint16_t port = *map.Assign(A("leash-a" + std::to_string(i), 2000 + i));
    EXPECT_NE(port, kSingleSubjectPort);
  }
}

TEST(PortMap, NeverReusesAPortEvenPastAGap) {
  absl::StatusOr<PortMap> map = PortMap::Parse(
      R"({"format":1,"accounts":{"leash-b":{"uid":5,"port":18007}}})", "ports.json");
  ASSERT_TRUE(map.ok()) << map.status();
  // 18000-18006 were handed out to accounts whose entries are gone only in this test's
  // fixture; the next port is always past the highest ever handed out.
  EXPECT_EQ(*map->Assign(A("leash-c", 6)), 18008);
}

TEST(PortMap, RecreatedAccountKeepsItsPortWithTheNewUid) {
  PortMap map;
  ASSERT_EQ(*map.Assign(A("leash-iris", 1001)), 18000);
  EXPECT_EQ(*map.Assign(A("leash-iris", 1077)), 18000);
  EXPECT_EQ(map.All()[0].uid, 1077u);
}

TEST(PortMap, APortThatIsNotUsableIsPassedOverForGood) {
  PortMap map;
  const auto usable = [](uint16_t port) { return port != 18001 && port != 18002; };
  EXPECT_EQ(*map.Assign(A("leash-a", 1), usable), 18000);
  EXPECT_EQ(*map.Assign(A("leash-b", 2), usable), 18003);
  // Usable again later, the skipped ports are still never handed out (ports are not reused).
  EXPECT_EQ(*map.Assign(A("leash-c", 3)), 18004);
  absl::StatusOr<uint16_t> none =
      map.Assign(A("leash-d", 4), [](uint16_t) { return false; });
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(PortMap, AnAccountWhosePortIsNotUsableMovesToAFreshOne) {
  PortMap map;
  ASSERT_EQ(*map.Assign(A("leash-a", 1)), 18000);
  ASSERT_EQ(*map.Assign(A("leash-b", 2)), 18001);
  const auto not_18000 = [](uint16_t port) { return port != 18000; };
  EXPECT_EQ(*map.Assign(A("leash-a", 1), not_18000), 18002);
  EXPECT_EQ(*map.Assign(A("leash-b", 2), not_18000), 18001);  // untouched
  EXPECT_EQ(*map.PortOf("leash-a"), 18002);
  // 18000 is never handed out again, usable or not.
  EXPECT_EQ(*map.Assign(A("leash-c", 3)), 18003);
  EXPECT_THAT(map.Serialize(), ::testing::Not(HasSubstr("18000")));
  // With no port left to move to, it keeps its own (and fails there), never none at all.
  EXPECT_EQ(*map.Assign(A("leash-a", 1), [](uint16_t) { return false; }), 18002);
}

TEST(PortMap, ExhaustionIsAnErrorNamingTheAccount) {
  PortMap map;
  for (int i = 0; i < 999; ++i) ASSERT_TRUE(map.Assign(A("leash-" + std::to_string(i), i)).ok());
  absl::StatusOr<uint16_t> port = map.Assign(A("leash-late", 5000));
  EXPECT_EQ(port.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(port.status().message()), HasSubstr("leash-late"));
}

TEST(PortMap, SerializeRoundTrips) {
  PortMap map;
  map.Assign(A("leash-iris", 1001)).IgnoreError();
  map.Assign(A("fido", 1000)).IgnoreError();
  absl::StatusOr<PortMap> again = PortMap::Parse(map.Serialize(), "ports.json");
  ASSERT_TRUE(again.ok()) << again.status() << map.Serialize();
  EXPECT_EQ(again->PortOf("leash-iris"), 18000);
  EXPECT_EQ(again->PortOf("fido"), 18001);
  EXPECT_FALSE(again->dirty());
}

TEST(PortMap, MissingFileIsAnEmptyMap) {
  absl::StatusOr<PortMap> map = PortMap::Load(std::string(std::getenv("TEST_TMPDIR")) + "/none.json");
  ASSERT_TRUE(map.ok());
  EXPECT_TRUE(map->All().empty());
}

TEST(PortMap, SaveThenLoad) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/ports.json";
  PortMap map;
  map.Assign(A("leash-iris", 1001)).IgnoreError();
  ASSERT_TRUE(map.Save(path).ok());
  EXPECT_FALSE(map.dirty());
  EXPECT_EQ(PortMap::Load(path)->PortOf("leash-iris"), 18000);
}

struct CorruptCase {
  const char* name;
  const char* json;
  const char* problem;
};

class CorruptPortMap : public ::testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptPortMap, IsRefusedNamingTheFileAndProblem) {
  absl::StatusOr<PortMap> map = PortMap::Parse(GetParam().json, "/var/lib/leash/ports.json");
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(map.status().message()),
              HasSubstr("port map /var/lib/leash/ports.json is corrupt"));
  EXPECT_THAT(std::string(map.status().message()), HasSubstr(GetParam().problem));
  EXPECT_THAT(std::string(map.status().message()), HasSubstr("restore it from backup"));
}

INSTANTIATE_TEST_SUITE_P(
    Corrupt, CorruptPortMap,
    ::testing::Values(
        CorruptCase{"NotJson", "{\"format\":1,", ""},
        CorruptCase{"Truncated", "", ""},
        CorruptCase{"UnknownField", R"({"format":1,"next":3})", ""},
        CorruptCase{"WrongFormat", R"({"format":2})", "format 2"},
        CorruptCase{"PortBelowRange", R"({"format":1,"accounts":{"leash-a":{"uid":1,"port":80}}})",
                    "outside 18000-18999"},
        CorruptCase{"SingleAgentPort",
                    R"({"format":1,"accounts":{"leash-a":{"uid":1,"port":18443}}})",
                    "single-agent listener"},
        CorruptCase{"DuplicatePort",
                    R"({"format":1,"accounts":{"leash-a":{"uid":1,"port":18001},"leash-b":{"uid":2,"port":18001}}})",
                    "assigned twice"},
        CorruptCase{"SlashInName", R"({"format":1,"accounts":{"a/b":{"uid":1,"port":18001}}})",
                    "is not an account name"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace leash::controlplane
