// NftNetfilter against the real kernel, in a fresh network namespace per test: the shape it
// leaves (read back with the `nft` binary), exactly-one-UID changes, startup migration of a
// table in the old shape, and ListSubjects/Release semantics. Traffic through the rules is
// tested in nft_traffic_test.cc.
#include "controlplane/nft_netfilter.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controlplane/testing/fake_netfilter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fixtures/netns.h"
#include "test/fixtures/root_fixture.h"
#include "test/fixtures/subprocess.h"
#include "test/network/nft_inspect.h"

namespace leash::controlplane {
namespace {

using ::leash::controlplane::testing::MakeSubject;
using ::leash::testing::ChainCounters;
using ::leash::testing::MapKeys;
using ::leash::testing::NetNamespace;
using ::leash::testing::Nft;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

class NftNetfilterTest : public leash::testing::RootTest {
 protected:
  void SetUp() override {
    RootTest::SetUp();
    if (!Ready()) return;
    // The netlink socket belongs to the namespace of the thread that opened it.
    absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
    ASSERT_TRUE(entered.ok()) << entered.status();
    absl::StatusOr<std::unique_ptr<NftNetfilter>> nf = NftNetfilter::Create();
    ASSERT_TRUE(nf.ok()) << nf.status();
    nf_ = std::move(*nf);
  }

  std::string List(const std::vector<std::string>& args) {
    absl::StatusOr<std::string> out = Nft(*ns_, args);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }
  // `nft -f` of `text` inside the namespace (test setup of an old-shape table).
  void NftScript(const std::string& text) {
    absl::StatusOr<std::string> out = leash::testing::RunOk(ns_->Exec({"nft", text}));
    ASSERT_TRUE(out.ok()) << out.status();
  }

  std::unique_ptr<NftNetfilter> nf_;
};

TEST_F(NftNetfilterTest, PrepareCreatesTheThreeTablesWithVmapDispatchers) {
  absl::StatusOr<std::vector<std::string>> lines = nf_->Prepare();
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, IsEmpty());
  for (const auto& [family, table, type] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ip", "leash", "nat"}, {"ip6", "leash", "nat"}, {"inet", "leash_filter", "filter"}}) {
    const std::string listing = List({"list", "table", family, table});
    EXPECT_THAT(listing, HasSubstr("map agents {\n\t\ttype uid : verdict")) << listing;
    EXPECT_THAT(listing, HasSubstr(absl::StrCat("chain output {\n\t\ttype ", type,
                                                " hook output priority")))
        << listing;
    EXPECT_THAT(listing, HasSubstr("meta skuid vmap @agents")) << listing;
  }
  EXPECT_EQ(nf_->Describe(), "nftables");
}

// The guard table (nft_ruleset.h): made by Prepare, left alone when current, replaced whole when
// someone changed it (here: emptied its chain, which would let a closed socket's answers out).
TEST_F(NftNetfilterTest, PrepareMakesTheGuardAndReplacesOneInAnotherShape) {
  constexpr char kGuardRule[] =
      "ct direction reply ct label 127 fib daddr type != local counter packets 0 bytes 0 drop "
      "comment \"leash: answer of a closed socket dropped\"";
  ASSERT_TRUE(nf_->Prepare().ok());
  EXPECT_THAT(List({"list", "table", "inet", "leash_guard"}), HasSubstr(kGuardRule));
  List({"flush", "chain", "inet", "leash_guard", "output"});
  ASSERT_THAT(List({"list", "table", "inet", "leash_guard"}), Not(HasSubstr(kGuardRule)));
  ASSERT_TRUE(nf_->Prepare().ok());
  EXPECT_THAT(List({"list", "table", "inet", "leash_guard"}), HasSubstr(kGuardRule));
}

TEST_F(NftNetfilterTest, PrepareTwiceChangesNothingAndKeepsSubjectsAndCounters) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1001, 18001)).ok());
  const std::string before = List({"-a", "list", "ruleset"});
  absl::StatusOr<std::vector<std::string>> again = nf_->Prepare();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(*again, IsEmpty());
  // Same handles, same single dispatch rule, same element: nothing flushed or re-added.
  EXPECT_EQ(List({"-a", "list", "ruleset"}), before);
}

TEST_F(NftNetfilterTest, ApplyBeforePrepareIsFailedPrecondition) {
  absl::Status s = nf_->Apply(MakeSubject(1001, 18001));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("Prepare()"));
}

TEST_F(NftNetfilterTest, ApplyAddsExactlyTheUidsChainsAndElements) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1001, 18001, false, {*engine::ParseIpAddress("192.0.2.53")}))
                  .ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1002, 18002, true)).ok());
  for (const auto& [family, table] : std::vector<std::pair<std::string, std::string>>{
           {"ip", "leash"}, {"ip6", "leash"}, {"inet", "leash_filter"}}) {
    EXPECT_THAT(*MapKeys(*ns_, family, table), ElementsAre(1001u, 1002u)) << family;
  }
  EXPECT_THAT(List({"list", "chain", "ip", "leash", "agent_1001"}),
              HasSubstr("meta l4proto tcp counter packets 0 bytes 0 redirect to :18001"));
  EXPECT_THAT(List({"list", "chain", "ip6", "leash", "agent_1002"}),
              HasSubstr("ip6 daddr ::1 tcp dport != 18000-18999 counter packets 0 bytes 0 return"));
  const std::string filter_1001 = List({"list", "chain", "inet", "leash_filter", "agent_1001"});
  EXPECT_THAT(filter_1001, HasSubstr("ip daddr 192.0.2.53 udp dport 53 counter"));
  EXPECT_THAT(filter_1001, HasSubstr("meta l4proto != tcp counter packets 0 bytes 0 drop"));
  EXPECT_THAT(filter_1001,
              HasSubstr("tcp sport 18000-18999 tcp flags syn,ack / syn,ack counter packets 0 "
                        "bytes 0 drop"));
  EXPECT_THAT(filter_1001, Not(HasSubstr("meta l4proto udp counter packets 0 bytes 0 return")));
  // network.udp: allow returns UDP before the drop of what is not TCP.
  EXPECT_THAT(List({"list", "chain", "inet", "leash_filter", "agent_1002"}),
              HasSubstr("meta l4proto udp counter packets 0 bytes 0 return\n\t\tmeta l4proto != "
                        "tcp counter packets 0 bytes 0 drop"));
  // The dispatchers still hold one rule each, whatever the number of subjects.
  EXPECT_THAT(List({"list", "chain", "ip", "leash", "output"}),
              HasSubstr("type nat hook output priority -100; policy accept;\n\t\tmeta skuid vmap "
                        "@agents\n\t}"));
  absl::StatusOr<std::vector<uint32_t>> listed = nf_->ListSubjects();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(*listed, ElementsAre(1001u, 1002u));
}

TEST_F(NftNetfilterTest, SubordinateRangesAreIntervalsOfTheSubjectsOwnChain) {
  ASSERT_TRUE(nf_->Prepare().ok());
  NetfilterSubject a = MakeSubject(1001, 18001);
  a.subordinate_uids = {{100000, 165535}};
  NetfilterSubject b = MakeSubject(1002, 18002);
  b.subordinate_uids = {{165536, 231071}, {4294000000u, 4294967294u}};  // adjacent to a's
  ASSERT_TRUE(nf_->Apply(a).ok());
  ASSERT_TRUE(nf_->Apply(b).ok());
  for (const auto& [family, table] : std::vector<std::pair<std::string, std::string>>{
           {"ip", "leash"}, {"ip6", "leash"}, {"inet", "leash_filter"}}) {
    EXPECT_THAT(List({"list", "map", family, table, "agents"}), HasSubstr("flags interval"));
    EXPECT_THAT(*leash::testing::MapEntries(*ns_, family, table),
                ElementsAre("100000-165535 : agent_1001", "1001 : agent_1001",
                            "1002 : agent_1002", "165536-231071 : agent_1002",
                            "4294000000-4294967294 : agent_1002"))
        << family;
  }
  // A change of ranges replaces exactly that subject's intervals.
  a.subordinate_uids = {{300000, 300009}};
  ASSERT_TRUE(nf_->Apply(a).ok());
  EXPECT_THAT(*leash::testing::MapEntries(*ns_, "ip", "leash"),
              ElementsAre("1001 : agent_1001", "1002 : agent_1002", "165536-231071 : agent_1002",
                          "300000-300009 : agent_1001", "4294000000-4294967294 : agent_1002"));
  // A whole restart's ApplyAll over what is there, then a release of one subject.
  ASSERT_TRUE(nf_->ApplyAll({a, b}).ok());
  ASSERT_TRUE(nf_->Release(1002).ok());
  for (const auto& [family, table] : std::vector<std::pair<std::string, std::string>>{
           {"ip", "leash"}, {"ip6", "leash"}, {"inet", "leash_filter"}}) {
    EXPECT_THAT(*leash::testing::MapEntries(*ns_, family, table),
                ElementsAre("1001 : agent_1001", "300000-300009 : agent_1001"))
        << family;
  }
}

TEST_F(NftNetfilterTest, TwoSubjectsSwapRangesInOneApplyAll) {
  ASSERT_TRUE(nf_->Prepare().ok());
  NetfilterSubject a = MakeSubject(1001, 18001);
  NetfilterSubject b = MakeSubject(1002, 18002);
  a.subordinate_uids = {{100000, 165535}};
  b.subordinate_uids = {{165536, 231071}};
  ASSERT_TRUE(nf_->ApplyAll({a, b}).ok());
  // Both in one batch: the old intervals are deleted before the new ones are added.
  std::swap(a.subordinate_uids, b.subordinate_uids);
  absl::Status swapped = nf_->ApplyAll({a, b});
  ASSERT_TRUE(swapped.ok()) << swapped;
  EXPECT_THAT(*leash::testing::MapEntries(*ns_, "inet", "leash_filter"),
              ElementsAre("100000-165535 : agent_1002", "1001 : agent_1001", "1002 : agent_1002",
                          "165536-231071 : agent_1001"));
}

TEST_F(NftNetfilterTest, ARangeStillHeldByAChainLeftFromACrashGoesToItsNewSubject) {
  ASSERT_TRUE(nf_->Prepare().ok());
  NetfilterSubject gone = MakeSubject(1001, 18001);
  gone.subordinate_uids = {{100000, 165535}};
  ASSERT_TRUE(nf_->Apply(gone).ok());
  // leashd crashed with no teardown; 1001 was removed and its range given to a new account.
  NetfilterSubject fresh = MakeSubject(1003, 18003);
  fresh.subordinate_uids = {{100000, 165535}};
  absl::Status applied = nf_->Apply(fresh);
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_THAT(*leash::testing::MapEntries(*ns_, "ip", "leash"),
              ElementsAre("100000-165535 : agent_1003", "1001 : agent_1001", "1003 : agent_1003"));
  // The same at startup, in one ApplyAll.
  NetfilterSubject later = MakeSubject(1004, 18004);
  later.subordinate_uids = {{100000, 165535}};
  ASSERT_TRUE(nf_->ApplyAll({MakeSubject(1003, 18003), later}).ok());
  EXPECT_THAT(*leash::testing::MapEntries(*ns_, "inet", "leash_filter"),
              ElementsAre("100000-165535 : agent_1004", "1001 : agent_1001", "1003 : agent_1003",
                          "1004 : agent_1004"));
}

TEST_F(NftNetfilterTest, PrepareDropsAMapOfSingleUids) {
  // The shape before subordinate ranges: no interval flag, host-order dispatch.
  NftScript(
      "table ip leash {\n"
      "  chain agent_1001 {\n"
      "    meta l4proto tcp redirect to :18001\n"
      "  }\n"
      "  map agents {\n"
      "    type uid : verdict\n"
      "    elements = { 1001 : jump agent_1001 }\n"
      "  }\n"
      "  chain output {\n"
      "    type nat hook output priority -100; policy accept;\n"
      "    meta skuid vmap @agents\n"
      "  }\n"
      "}\n");
  absl::StatusOr<std::vector<std::string>> lines = nf_->Prepare();
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_THAT(*lines, SizeIs(1));
  EXPECT_THAT(lines->front(), HasSubstr("holds single UIDs, not intervals"));
  EXPECT_THAT(List({"list", "map", "ip", "leash", "agents"}), HasSubstr("flags interval"));
  EXPECT_THAT(*MapKeys(*ns_, "ip", "leash"), IsEmpty());
}

TEST_F(NftNetfilterTest, ReplacingOneUidLeavesAnotherUidsObjectsUntouched) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1001, 18001)).ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1002, 18002)).ok());
  const std::string other_before = List({"-a", "list", "chain", "ip", "leash", "agent_1002"});
  const std::string other_filter_before =
      List({"-a", "list", "chain", "inet", "leash_filter", "agent_1002"});
  ASSERT_TRUE(nf_->Apply(MakeSubject(1001, 18005, true)).ok());
  EXPECT_THAT(List({"list", "chain", "ip", "leash", "agent_1001"}), HasSubstr("redirect to :18005"));
  EXPECT_THAT(List({"list", "chain", "inet", "leash_filter", "agent_1001"}),
              HasSubstr("meta l4proto udp counter packets 0 bytes 0 return"));
  // Same rule handles (nothing re-created) for the UID that was not applied.
  EXPECT_EQ(List({"-a", "list", "chain", "ip", "leash", "agent_1002"}), other_before);
  EXPECT_EQ(List({"-a", "list", "chain", "inet", "leash_filter", "agent_1002"}),
            other_filter_before);
  EXPECT_THAT(*MapKeys(*ns_, "ip", "leash"), ElementsAre(1001u, 1002u));
}

TEST_F(NftNetfilterTest, ReleaseRemovesExactlyOneUidAndAbsentUidIsNotAnError) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->ApplyAll({MakeSubject(1001, 18001), MakeSubject(1002, 18002),
                             MakeSubject(1003, 18003)})
                  .ok());
  ASSERT_TRUE(nf_->Release(1002).ok());
  for (const auto& [family, table] : std::vector<std::pair<std::string, std::string>>{
           {"ip", "leash"}, {"ip6", "leash"}, {"inet", "leash_filter"}}) {
    EXPECT_THAT(*MapKeys(*ns_, family, table), ElementsAre(1001u, 1003u)) << family;
    EXPECT_THAT(List({"list", "table", family, table}), Not(HasSubstr("agent_1002"))) << family;
  }
  EXPECT_THAT(*nf_->ListSubjects(), ElementsAre(1001u, 1003u));
  EXPECT_TRUE(nf_->Release(1002).ok());   // again
  EXPECT_TRUE(nf_->Release(4242).ok());   // never applied
}

TEST_F(NftNetfilterTest, ReleaseBeforePrepareIsNotAnError) {
  EXPECT_TRUE(nf_->Release(1001).ok());
  absl::StatusOr<std::vector<uint32_t>> listed = nf_->ListSubjects();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(*listed, IsEmpty());
}

TEST_F(NftNetfilterTest, ReleaseRepairsAHalfPresentUid) {
  ASSERT_TRUE(nf_->Prepare().ok());
  // A chain with no element (someone deleted the element by hand): still removed, still listed.
  NftScript("add chain inet leash_filter agent_1007");
  EXPECT_THAT(*nf_->ListSubjects(), ElementsAre(1007u));
  ASSERT_TRUE(nf_->Release(1007).ok());
  EXPECT_THAT(*nf_->ListSubjects(), IsEmpty());
  // And Apply over a half-present UID replaces what is there.
  NftScript("add chain ip leash agent_1008");
  ASSERT_TRUE(nf_->Apply(MakeSubject(1008, 18008)).ok());
  EXPECT_THAT(*MapKeys(*ns_, "ip", "leash"), ElementsAre(1008u));
}

TEST_F(NftNetfilterTest, ARefusedBatchChangesNothingAndNamesTheRefusedCommand) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1002, 18002)).ok());
  const std::string before = List({"-a", "list", "ruleset"});
  // Break one table behind leash's back: its agents map is gone, so the element for a new UID
  // cannot be added — the last table in the batch, after everything for ip leash was queued.
  NftScript("flush chain inet leash_filter output\n"
            "delete element inet leash_filter agents { 1002 }\n"
            "delete chain inet leash_filter agent_1002\n"
            "delete map inet leash_filter agents\n");
  const std::string broken = List({"-a", "list", "ruleset"});
  absl::Status s = nf_->Apply(MakeSubject(1001, 18001));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("add element 1001 : jump agent_<uid> to map inet leash_filter"));
  EXPECT_THAT(s.message(), HasSubstr("nothing was applied"));
  // All or nothing: ip and ip6 leash did not gain agent_1001 either.
  EXPECT_EQ(List({"-a", "list", "ruleset"}), broken);
  EXPECT_NE(broken, before);
}

TEST_F(NftNetfilterTest, ApplyAllReplacesPresentUidsAndRefusesBadInput) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1001, 18001)).ok());
  ASSERT_TRUE(nf_->ApplyAll({MakeSubject(1001, 18011), MakeSubject(1002, 18002)}).ok());
  EXPECT_THAT(List({"list", "chain", "ip6", "leash", "agent_1001"}), HasSubstr("redirect to :18011"));
  EXPECT_EQ(nf_->ApplyAll({MakeSubject(1003, 18003), MakeSubject(1003, 18004)}).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status root = nf_->Apply(MakeSubject(0, 18001));
  EXPECT_EQ(root.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.message(), HasSubstr("UID 0"));
  EXPECT_EQ(nf_->Apply(MakeSubject(1004, 8443)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(*nf_->ListSubjects(), ElementsAre(1001u, 1002u));
}

TEST_F(NftNetfilterTest, ApplyAllOfAThousandSubjectsIsOneBatch) {
  ASSERT_TRUE(nf_->Prepare().ok());
  std::vector<NetfilterSubject> subjects;
  for (uint32_t i = 0; i < 1000; ++i) {
    subjects.push_back(MakeSubject(100000 + i, static_cast<uint16_t>(18000 + i % 1000), false,
                                   {*engine::ParseIpAddress("192.0.2.53")}));
  }
  absl::Status applied = nf_->ApplyAll(subjects);
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_THAT(*nf_->ListSubjects(), SizeIs(1000));
  EXPECT_THAT(*MapKeys(*ns_, "inet", "leash_filter"), SizeIs(1000));
  // Again, now replacing all 1,000: their elements are read back from multi-element dumps and
  // deleted before being re-added.
  for (NetfilterSubject& subject : subjects) subject.udp_allowed = true;
  applied = nf_->ApplyAll(subjects);
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_THAT(*MapKeys(*ns_, "ip6", "leash"), SizeIs(1000));
  const std::string filter = List({"list", "table", "inet", "leash_filter"});
  // Every one of the 1,000 replaced: each now returns UDP.
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(filter, "meta l4proto udp counter packets 0 bytes 0 return")).size(),
            1001u);
}

// --- Startup migration ---------------------------------------------------------------------

TEST_F(NftNetfilterTest, PrepareDropsTableWithUidRulesInTheHookedChain) {
  // The shape before per-UID chains: a UID's rules straight in the hooked chain.
  NftScript(
      "table ip leash {\n"
      "  chain output {\n"
      "    type nat hook output priority -100; policy accept;\n"
      "    meta skuid 1001 ip daddr 127.0.0.0/8 tcp dport != 18000-18999 return\n"
      "    meta skuid 1001 meta l4proto tcp redirect to :18001\n"
      "  }\n"
      "}\n"
      "table inet leash_filter {\n"
      "  chain output {\n"
      "    type filter hook output priority 0; policy accept;\n"
      "    meta skuid 1001 meta l4proto udp drop\n"
      "  }\n"
      "}\n");
  absl::StatusOr<std::vector<std::string>> lines = nf_->Prepare();
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_THAT(*lines, SizeIs(2));
  EXPECT_THAT((*lines)[0], HasSubstr("dropped table ip leash left in the old shape"));
  EXPECT_THAT((*lines)[0], HasSubstr("no agents map"));
  EXPECT_THAT((*lines)[1], HasSubstr("dropped table inet leash_filter"));
  const std::string ip = List({"list", "table", "ip", "leash"});
  EXPECT_THAT(ip, Not(HasSubstr("skuid 1001")));
  EXPECT_THAT(ip, HasSubstr("meta skuid vmap @agents"));
  EXPECT_THAT(List({"list", "table", "inet", "leash_filter"}), Not(HasSubstr("skuid 1001")));
  // Now in the current shape: a second start drops nothing.
  EXPECT_THAT(*nf_->Prepare(), IsEmpty());
  ASSERT_TRUE(nf_->Apply(MakeSubject(1001, 18001)).ok());
}

TEST_F(NftNetfilterTest, PrepareDropsTableWithALinearJumpDispatcher) {
  // A dispatcher of `meta skuid X jump agent_X` rules: per-UID chains, but the jumps are rules
  // in the hooked chain that a map-based Release cannot see (and they pin agent_X in place).
  NftScript(
      "table ip6 leash {\n"
      "  chain agent_1001 {\n"
      "    meta l4proto tcp redirect to :18001\n"
      "  }\n"
      "  chain output {\n"
      "    type nat hook output priority -100; policy accept;\n"
      "    meta skuid 1001 jump agent_1001\n"
      "  }\n"
      "}\n");
  absl::StatusOr<std::vector<std::string>> lines = nf_->Prepare();
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_THAT(*lines, ElementsAre(HasSubstr("dropped table ip6 leash")));
  EXPECT_THAT(List({"list", "table", "ip6", "leash"}), Not(HasSubstr("agent_1001")));
  EXPECT_THAT(*nf_->ListSubjects(), IsEmpty());
}

TEST_F(NftNetfilterTest, PrepareKeepsCurrentShapeTablesAndTheirSubjects) {
  ASSERT_TRUE(nf_->Prepare().ok());
  ASSERT_TRUE(nf_->ApplyAll({MakeSubject(1001, 18001), MakeSubject(1002, 18002)}).ok());
  const std::string before = List({"-a", "list", "ruleset"});
  // A restarted leashd: a new socket, the same kernel state.
  absl::StatusOr<NetNamespace::Entered> entered = ns_->Enter();
  ASSERT_TRUE(entered.ok());
  absl::StatusOr<std::unique_ptr<NftNetfilter>> restarted = NftNetfilter::Create();
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_THAT(*(*restarted)->Prepare(), IsEmpty());
  EXPECT_EQ(List({"-a", "list", "ruleset"}), before);
  EXPECT_THAT(*(*restarted)->ListSubjects(), ElementsAre(1001u, 1002u));
}

TEST_F(NftNetfilterTest, PrepareLeavesOtherTablesAlone) {
  NftScript(
      "table ip other {\n"
      "  chain output {\n"
      "    type nat hook output priority -100; policy accept;\n"
      "    meta skuid 1001 meta l4proto tcp redirect to :9999\n"
      "  }\n"
      "}\n");
  ASSERT_TRUE(nf_->Prepare().ok());
  EXPECT_THAT(List({"list", "table", "ip", "other"}), HasSubstr("redirect to :9999"));
}

}  // namespace
}  // namespace leash::controlplane
