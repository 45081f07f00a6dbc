#include "controlplane/subordinate_ids.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using engine::UidRange;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(SubordinateIds, AnAccountHoldsTheRangesOfItsNameAndOfItsUidWrittenAsANumber) {
  const SubordinateIdFile file = ParseSubordinateIds(
      "leash-iris:100000:65536\n"
      "# a comment\n"
      "\n"
      "1001:300000:10\n"
      "leash-vader:165536:65536\n"
      "leash-iris:165536:0\n",  // a count of 0 grants nothing
      "/etc/subuid");
  EXPECT_THAT(file.RangesOf("leash-iris", 1001),
              ElementsAre(UidRange{100000, 165535}, UidRange{300000, 300009}));
  EXPECT_THAT(file.RangesOf("leash-vader", 1002), ElementsAre(UidRange{165536, 231071}));
  EXPECT_THAT(file.RangesOf("leash-none", 1003), IsEmpty());
  EXPECT_THAT(file.bad_lines, IsEmpty());
}

// The owner test as an account named `name` with no alias would have it.
auto Named(absl::string_view name) {
  return [name](absl::string_view owner) { return owner == name; };
}

TEST(SubordinateIds, ALineThatCannotBeReadIsReportedForTheOwnerItNames) {
  const SubordinateIdFile file = ParseSubordinateIds(
      "leash-iris:0x186a0:65536\n"
      "leash-vader:100000\n"
      "leash-kylo:4294967000:1000\n"
      "leash-zero:01000000:10\n"  // newuidmap reads 01000000 as octal: 262144
      "leash-ok:200000:10\n",
      "/etc/subuid");
  ASSERT_EQ(file.bad_lines.size(), 4u);
  EXPECT_THAT(file.ProblemsOf(Named("leash-iris")),
              ElementsAre(AllOf(HasSubstr("line 1 of /etc/subuid"), HasSubstr("plain decimal"))));
  EXPECT_THAT(file.ProblemsOf(Named("leash-vader")), ElementsAre(HasSubstr("three fields")));
  EXPECT_THAT(file.ProblemsOf(Named("leash-kylo")), ElementsAre(HasSubstr("past the last UID")));
  EXPECT_THAT(file.ProblemsOf(Named("leash-zero")), ElementsAre(HasSubstr("plain decimal")));
  EXPECT_THAT(file.ProblemsOf(Named("leash-ok")), IsEmpty());
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
