// Removals judged like every write: an entry taken out of the floor (removing an allow tightens,
// removing a deny is unset.deny and needs its --ack) and a profile deleted while a binding still
// names it (refused unless each stranded binding is acknowledged with dangling:<scope>).
#include "engine/removal_consent.h"

#include "engine/refusal.h"
#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kFloor[] = R"(
user: fido
network: {mode: whitelist, allow: [github.com, openai.com], deny: [evil.com]}
commands: {mode: blacklist, deny: [ssh, nc]}
)";

std::vector<std::string> Tokens(const leash::v1::Refusal& refusal) {
  std::vector<std::string> out;
  for (const leash::v1::Loosening& l : refusal.loosenings()) out.push_back(l.ack_token());
  return out;
}

const std::vector<std::string> kRemoveSsh = {"sudo", "leash", "commands", "remove", "ssh"};

TEST(JudgeFloorEdit, RemovingAnAllowTightensAndIsAccepted) {
  const leash::v1::Config before = Floor(kFloor);
  leash::v1::Config after = before;
  after.mutable_network()->mutable_allow()->mutable_entries()->RemoveLast();
  FloorEditJudgement j = JudgeFloorEdit(before, after, "removing network.allow 'openai.com'",
                                        {"sudo", "leash", "network", "remove", "openai.com"}, {});
  EXPECT_FALSE(j.refusal.has_value()) << j.refusal->message();
  EXPECT_THAT(j.notices, IsEmpty());
}

TEST(JudgeFloorEdit, RemovingADenyLoosensAndNeedsItsAckNamedInTheRefusal) {
  const leash::v1::Config before = Floor(kFloor);
  leash::v1::Config after = Floor(R"(
user: fido
network: {mode: whitelist, allow: [github.com, openai.com], deny: [evil.com]}
commands: {mode: blacklist, deny: [nc]}
)");
  const std::string what = "removing commands.deny 'ssh' from the floor";
  FloorEditJudgement j = JudgeFloorEdit(before, after, what, kRemoveSsh, {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "loosening");
  EXPECT_THAT(j.refusal->message(),
              HasSubstr("loosens the floor for every subject on the host in 1 way"));
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("unset.deny:commands:ssh"));
  EXPECT_EQ(j.refusal->loosenings(0).scope(), "floor");
  EXPECT_EQ(j.refusal->rerun(),
            "sudo leash commands remove ssh --ack 'unset.deny:commands:ssh'");
  EXPECT_THAT(RenderRefusal(*j.refusal), HasSubstr("      --ack 'unset.deny:commands:ssh'\n"));

  // With its ack it is accepted; an ack for something else is refused as not consent here...
  EXPECT_FALSE(JudgeFloorEdit(before, after, what, kRemoveSsh, {"unset.deny:commands:ssh"})
                   .refusal.has_value());
  FloorEditJudgement other =
      JudgeFloorEdit(before, after, what, kRemoveSsh, {"unset.deny:commands:nc"});
  ASSERT_TRUE(other.refusal.has_value());
  EXPECT_EQ(other.refusal->kind(), "loosening");
  // ...and a malformed one is an "ack" refusal.
  FloorEditJudgement malformed = JudgeFloorEdit(before, after, what, kRemoveSsh, {"ssh"});
  ASSERT_TRUE(malformed.refusal.has_value());
  EXPECT_EQ(malformed.refusal->kind(), "ack");
}

TEST(JudgeFloorEdit, AnAckTheEditDoesNotNeedIsSaidNotNeeded) {
  const leash::v1::Config before = Floor(kFloor);
  FloorEditJudgement j =
      JudgeFloorEdit(before, before, "removing x", kRemoveSsh, {"unset.deny:commands:ssh"});
  EXPECT_FALSE(j.refusal.has_value());
  ASSERT_EQ(j.notices.size(), 1u);
  EXPECT_THAT(j.notices[0], HasSubstr("is not needed"));
}

// Every floor edit, judged as the floor before and after: what loosens needs its token, what
// tightens or changes nothing proceeds; the consent given is returned for the ledger.
TEST(JudgeFloorEdit, EveryFloorEditKindIsJudgedBeforeAndAfter) {
  struct Row {
    const char* name;
    const char* after;  // the floor after the edit
    std::vector<std::string> tokens;  // what it needs; empty: it proceeds without acks
  };
  const std::vector<Row> rows = {
      {"an allow added to a whitelist",
       "user: fido\nnetwork: {mode: whitelist, allow: [github.com, openai.com, gist.github.com], "
       "deny: [evil.com]}\ncommands: {mode: blacklist, deny: [ssh, nc]}\n",
       {"network.allow:gist.github.com"}},
      {"a mode switched to blacklist",
       "user: fido\nnetwork: {mode: blacklist, allow: [github.com, openai.com], "
       "deny: [evil.com]}\ncommands: {mode: blacklist, deny: [ssh, nc]}\n",
       {"network.mode:blacklist"}},
      {"a deny removed",
       "user: fido\nnetwork: {mode: whitelist, allow: [github.com, openai.com]}\n"
       "commands: {mode: blacklist, deny: [ssh, nc]}\n",
       {"unset.deny:network:evil.com"}},
      {"a deny added",
       "user: fido\nnetwork: {mode: whitelist, allow: [github.com, openai.com], "
       "deny: [evil.com]}\ncommands: {mode: blacklist, deny: [ssh, nc, curl]}\n",
       {}},
      {"an allow added to a blacklist (never consulted)",
       "user: fido\nnetwork: {mode: whitelist, allow: [github.com, openai.com], "
       "deny: [evil.com]}\ncommands: {mode: blacklist, allow: [python3], deny: [ssh, nc]}\n",
       {}},
      {"a mode switched to whitelist",
       "user: fido\nnetwork: {mode: whitelist, allow: [github.com, openai.com], "
       "deny: [evil.com]}\ncommands: {mode: whitelist, deny: [ssh, nc]}\n",
       {}},
  };
  const leash::v1::Config before = Floor(kFloor);
  const std::vector<std::string> words = {"sudo", "leash", "network", "allow", "x"};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const leash::v1::Config after = Floor(row.after);
    FloorEditJudgement bare = JudgeFloorEdit(before, after, row.name, words, {});
    if (row.tokens.empty()) {
      EXPECT_FALSE(bare.refusal.has_value()) << bare.refusal->message();
      EXPECT_THAT(bare.consent, IsEmpty());
      continue;
    }
    ASSERT_TRUE(bare.refusal.has_value());
    EXPECT_EQ(bare.refusal->kind(), "loosening");
    EXPECT_EQ(Tokens(*bare.refusal), row.tokens);
    EXPECT_EQ(bare.refusal->rerun(), RenderCommand(words, row.tokens));
    FloorEditJudgement acked = JudgeFloorEdit(before, after, row.name, words, row.tokens);
    EXPECT_FALSE(acked.refusal.has_value()) << acked.refusal->message();
    EXPECT_EQ(acked.consent, row.tokens);
  }
}

Bindings Bound() {
  return Bindings({{"agent:leash-iris", "web", {}},
                   {"global", "web", {}},
                   {"agent:leash-vader", "other", {}}});
}

TEST(JudgeProfileDelete, DeleteOfABoundProfileIsRefusedNamingEachBindingTheUnbindAndTheAck) {
  ProfileDeleteJudgement j = JudgeProfileDelete(Bound(), "web", {});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "dangling");
  EXPECT_THAT(j.refusal->message(), HasSubstr("still bound to agent:leash-iris, global"));
  EXPECT_THAT(j.refusal->message(), HasSubstr("sudo leash unbind agent:leash-iris; sudo leash "
                                              "unbind global"));
  EXPECT_THAT(Tokens(*j.refusal), ElementsAre("dangling:agent:leash-iris", "dangling:global"));
  EXPECT_THAT(j.refusal->loosenings(1).message(),
              HasSubstr("every subject on the host is denied everything (fail-closed)"));
  EXPECT_EQ(j.refusal->rerun(),
            "sudo leash profile delete web --ack 'dangling:agent:leash-iris' --ack "
            "'dangling:global'");

  // One of two acks: only the missing one is listed, the re-run line still carries both.
  ProfileDeleteJudgement half = JudgeProfileDelete(Bound(), "web", {"dangling:global"});
  ASSERT_TRUE(half.refusal.has_value());
  EXPECT_THAT(Tokens(*half.refusal), ElementsAre("dangling:agent:leash-iris"));
  EXPECT_THAT(half.refusal->rerun(), HasSubstr("--ack 'dangling:global'"));
}

TEST(JudgeProfileDelete, WithEveryAckItProceedsAndSaysWhatItStrandsAndHowToUndoIt) {
  ProfileDeleteJudgement j =
      JudgeProfileDelete(Bound(), "web", {"dangling:agent:leash-iris", "dangling:global"});
  EXPECT_FALSE(j.refusal.has_value());
  ASSERT_EQ(j.notices.size(), 2u);
  EXPECT_THAT(j.notices[0], HasSubstr("agent:leash-iris is denied everything (fail-closed)"));
  EXPECT_THAT(j.notices[0], HasSubstr("sudo leash unbind agent:leash-iris --ack "
                                      "'fail_closed:web'"));
  // The consent the ledger records: one token per stranded binding.
  EXPECT_THAT(j.consent, ElementsAre("dangling:agent:leash-iris", "dangling:global"));
}

TEST(JudgeProfileDelete, AnUnboundProfileIsDeletedWithoutConsentAndStrayAcksAreSaid) {
  ProfileDeleteJudgement j = JudgeProfileDelete(Bound(), "unused", {});
  EXPECT_FALSE(j.refusal.has_value());
  EXPECT_THAT(j.notices, IsEmpty());
  j = JudgeProfileDelete(Bound(), "unused", {"dangling:global"});
  EXPECT_FALSE(j.refusal.has_value());
  ASSERT_EQ(j.notices.size(), 1u);
  EXPECT_THAT(j.notices[0], HasSubstr("is not needed"));
  j = JudgeProfileDelete(Bound(), "web", {"fail_closed:web"});
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "ack");
}

}  // namespace
}  // namespace leash::engine
