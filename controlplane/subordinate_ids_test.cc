#include "controlplane/subordinate_ids.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using engine::UidRange;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The owner test as an account named `name` with no alias would have it.
auto Named(absl::string_view name) {
  return [name](absl::string_view owner) { return owner == name; };
}

TEST(SubordinateIds, AnAccountHoldsTheRangesOfItsNameAndOfItsUidWrittenAsANumber) {
  const SubordinateIdFile file = ParseSubordinateIds(
      "leash-iris:100000:65536\n"
      "# a comment\n"
      "\n"
      "1001:300000:10\n"
      "leash-vader:165536:65536\n"
      "leash-iris:165536:0\n",  // a count of 0 grants nothing (away from 0)
      "/etc/subuid");
  EXPECT_THAT(file.RangesOf("leash-iris", 1001),
              ElementsAre(UidRange{100000, 165535}, UidRange{300000, 300009}));
  EXPECT_THAT(file.RangesOf("leash-vader", 1002), ElementsAre(UidRange{165536, 231071}));
  EXPECT_THAT(file.RangesOf("leash-none", 1003), IsEmpty());
  EXPECT_THAT(file.ignored, ElementsAre(Field(&SubordinateIdFile::IgnoredLine::line, 2),
                                         Field(&SubordinateIdFile::IgnoredLine::line, 3),
                                         Field(&SubordinateIdFile::IgnoredLine::line, 6)));
}

// shadow's getulong is strtoul(text, &end, 0) with nothing after the number.
TEST(SubordinateIds, ANumberIsReadAsNewuidmapsStrtoulReadsIt) {
  struct Case {
    const char* text;
    std::optional<uint64_t> value;
  };
  const Case cases[] = {
      {"100000", 100000},
      {"0x186a0", 100000},      // hex
      {"0X186A0", 100000},
      {"0303240", 100000},      // a leading 0: octal
      {"0", 0},
      {"00", 0},
      {" \t100000", 100000},    // leading whitespace is skipped
      {"\xa0" "100000", 100000}, // a byte a single-byte locale may call a space: counted
      {"+100000", 100000},
      {"-1", UINT64_MAX},       // negated modulo 2^64, no error
      {"-0", 0},
      {"18446744073709551615", UINT64_MAX},
      {"18446744073709551616", std::nullopt},  // ERANGE
      {"-18446744073709551616", std::nullopt},
      {"0x", std::nullopt},     // strtoul stops at the x
      {"0xg", std::nullopt},
      {"08", std::nullopt},     // 8 is no octal digit
      {"0b101", std::nullopt},  // glibc 2.36 has no binary prefix
      {"100000 ", std::nullopt},  // trailing whitespace is something after the number
      {"1e5", std::nullopt},
      {"", std::nullopt},
      {" ", std::nullopt},
      {"-", std::nullopt},
      {"abc", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ReadSubidNumber(c.text), c.value) << "\"" << c.text << "\"";
  }
}

// Every form of a line, and what newuidmap grants from it.
TEST(SubordinateIds, ALineIsReadAsNewuidmapReadsIt) {
  struct Case {
    std::string line;
    std::vector<UidRange> granted;  // to the owner "o"
  };
  const Case cases[] = {
      {"o:100000:65536", {{100000, 165535}}},
      {"o:0x7D3930A0:65536", {{0x7D3930A0u, 0x7D3930A0u + 65535}}},  // hex first
      {"o:100000:0x10000", {{100000, 165535}}},                     // hex count
      {"o:0303240:010", {{100000, 100007}}},                         // octal
      {"o:100000:65536:", {{100000, 165535}}},                       // a trailing field
      {"o:100000:65536:anything:at all", {{100000, 165535}}},
      {"o: 100000:65536", {{100000, 165535}}},                       // leading whitespace
      {"o:+100000:+10", {{100000, 100009}}},
      {"o:0:0", {{0, 4294967295u}}},             // a count of 0 at 0 wraps to every ID
      {"o:1:-1", {{1, 4294967295u}}},            // -1 is 2^64-1: 1 + 2^64-1 - 1 does not wrap
      {"o:0:-1", {{0, 4294967295u}}},
      {"o:4294967000:1000", {{4294967000u, 4294967295u}}},  // past 32 bits: cut at the last ID
      {"o:100000:0", {}},                        // ends before it starts
      {"o:100000:-1", {}},                       // wraps below its start
      {"o:-1:10", {}},                           // starts past 32 bits
      {"o:4294967296:10", {}},
      {"o:100000:18446744073709551616", {}},     // ERANGE
      {"o:100000:65536 ", {}},                   // trailing whitespace
      {"o:100000", {}},                          // two fields
      {"o:100000:", {}},                         // an empty field
      {"o::10", {}},
      {":100000:10", {}},                        // no owner
      {"", {}},                                  // blank
      {"   ", {}},
      {"o:1x:1", {}},                            // garbage
      {"#o:100000:10", {}},                      // no comments: the owner is "#o"
      {"+o:100000:10", {}},                      // NIS
      {"-o:100000:10", {}},
      {"o:100000:10" + std::string(1100, ' '), {}},  // 1024 bytes or more
  };
  for (const Case& c : cases) {
    const SubordinateIdFile file = ParseSubordinateIds(c.line + "\n", "/etc/subuid");
    EXPECT_EQ(file.RangesOf("o", 4242), c.granted) << "\"" << c.line << "\"";
    // Every line either grants or is said to be ignored.
    EXPECT_EQ(file.entries.size() + file.ignored.size(), 1u) << "\"" << c.line << "\"";
  }
}

TEST(SubordinateIds, ALineIsTheOwnersByNameOrByTheUidWrittenInDecimal) {
  const SubordinateIdFile file = ParseSubordinateIds(
      "4242:100000:10\n"    // the UID in decimal: the account's
      "0x1092:200000:10\n"  // the UID in hex: a name, some other account's (no such alias)
      "o :300000:10\n",     // a name with a space: not "o"
      "/etc/subuid");
  EXPECT_THAT(file.RangesOf("o", 4242), ElementsAre(UidRange{100000, 100009}));
}

// A NUL byte ends a line for newuidmap's reader and joins the next line to it.
TEST(SubordinateIds, ALineWithANulByteIsJoinedToTheNextAsNewuidmapsReaderJoinsThem) {
  constexpr char kJoined[] = "o:100000:10\0junk\n:200000:10\nx:1:1\n";
  const SubordinateIdFile file =
      ParseSubordinateIds(absl::string_view(kJoined, sizeof(kJoined) - 1), "/etc/subuid");
  // "o:100000:10" + ":200000:10": the fourth field is ignored.
  EXPECT_THAT(file.RangesOf("o", 4242), ElementsAre(UidRange{100000, 100009}));
  constexpr char kOwnerOnly[] = "o\0junk\n:200000:10\n";
  const SubordinateIdFile joined =
      ParseSubordinateIds(absl::string_view(kOwnerOnly, sizeof(kOwnerOnly) - 1), "/etc/subuid");
  EXPECT_THAT(joined.RangesOf("o", 4242), ElementsAre(UidRange{200000, 200009}));
}

TEST(SubordinateIds, WhatIsReadInAnotherFormOrIgnoredIsSaidForTheOwnerItNames) {
  const SubordinateIdFile file = ParseSubordinateIds(
      "leash-iris:0x186a0:65536\n"
      "leash-vader:100000\n"
      "leash-kylo:4294967000:1000\n"
      "leash-ok:200000:10\n",
      "/etc/subuid");
  EXPECT_THAT(file.NotesOf(Named("leash-iris")),
              ElementsAre(AllOf(HasSubstr("line 1 of /etc/subuid"), HasSubstr("0x186a0:65536"),
                                HasSubstr("100000-165535"))));
  EXPECT_THAT(file.NotesOf(Named("leash-vader")),
              ElementsAre(AllOf(HasSubstr("line 2"), HasSubstr("three fields"),
                                HasSubstr("grants nothing"))));
  EXPECT_THAT(file.NotesOf(Named("leash-kylo")), ElementsAre(HasSubstr("4294967000-4294967295")));
  EXPECT_THAT(file.NotesOf(Named("leash-ok")), IsEmpty());
  EXPECT_THAT(file.RangesOf("leash-ok", 1004), ElementsAre(UidRange{200000, 200009}));
}

TEST(SubordinateIds, AnEntryIsTheAccountsByItsLoginNameItsUidOrAnAliasOfItsUid) {
  auto uid_of = [](absl::string_view name) -> std::optional<uint32_t> {
    if (name == "leash-iris" || name == "iris-alias") return 1001;
    if (name == "bob") return 1002;
    return std::nullopt;
  };
  EXPECT_TRUE(OwnerIsAccount("leash-iris", "leash-iris", 1001, uid_of));
  EXPECT_TRUE(OwnerIsAccount("1001", "leash-iris", 1001, uid_of));
  // newuidmap lets the UID use a range an alias of it (useradd -o) owns.
  EXPECT_TRUE(OwnerIsAccount("iris-alias", "leash-iris", 1001, uid_of));
  EXPECT_FALSE(OwnerIsAccount("bob", "leash-iris", 1001, uid_of));
  EXPECT_FALSE(OwnerIsAccount("1002", "leash-iris", 1001, uid_of));
  EXPECT_FALSE(OwnerIsAccount("gone", "leash-iris", 1001, uid_of));
}

TEST(SubordinateIds, AnotherOwnersOverlappingRangeIsReported) {
  const SubordinateIdFile file = ParseSubordinateIds(
      "leash-iris:100000:65536\nalice:150000:10\nbob:300000:10\n", "/etc/subuid");
  auto iris = Named("leash-iris");
  EXPECT_THAT(file.OverlapsWithOthers(iris, file.RangesOf(iris)),
              ElementsAre(AllOf(HasSubstr("150000-150009 to alice"), HasSubstr("disjoint"))));
}

TEST(SubordinateIds, SubidSourcesOtherThanTheFilesAreNamed) {
  EXPECT_THAT(NonFileSubidSources("passwd: files\ngroup: files\n"), IsEmpty());
  EXPECT_THAT(NonFileSubidSources("subid: files\n"), IsEmpty());
  EXPECT_THAT(NonFileSubidSources("passwd: files sss\n  subid:   sss [NOTFOUND=return] files # x\n"),
              ElementsAre("sss"));
}

TEST(SubordinateIds, AMissingFileHoldsNoRangesAndAPresentOneIsRead) {
  auto dir = *leash::testing::TempDir::Create("subid");
  absl::StatusOr<SubordinateIdFile> missing = ReadSubordinateIds(dir->Join("absent"));
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_THAT(missing->entries, IsEmpty());
  std::ofstream(dir->Join("subuid")) << "leash-iris:100000:65536\n";
  absl::StatusOr<SubordinateIdFile> present = ReadSubordinateIds(dir->Join("subuid"));
  ASSERT_TRUE(present.ok()) << present.status();
  EXPECT_THAT(present->RangesOf("leash-iris", 1), ElementsAre(UidRange{100000, 165535}));
  // A directory where the file should be cannot be read: an error, not "no ranges".
  EXPECT_FALSE(ReadSubordinateIds(dir->path()).ok());
}

}  // namespace
}  // namespace leash::controlplane
