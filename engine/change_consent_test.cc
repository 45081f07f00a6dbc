// JudgeResolvedChange: each reached subject resolved before and after a write (rule P12).
#include "engine/change_consent.h"

#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Library;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Tokens(const std::vector<FieldChange>& changes) {
  std::vector<std::string> out;
  for (const FieldChange& c : changes) out.push_back(c.ack_token);
  return out;
}

TEST(JudgeResolvedChange, ADroppedDenyIsAnUnsetDenyForTheSubjectThatHadIt) {
  const leash::v1::Config floor = Floor("user: fido\ncommands: {mode: blacklist}");
  ProfileLibrary profiles = Library({{"no-py", "commands: {deny: [python3]}"}, {"none", "{}"}});
  Bindings before;
  before.Put({"agent:leash-vader", "no-py", {}});
  Bindings after;
  after.Put({"agent:leash-vader", "none", {}});
  ResolvedChange change =
      JudgeResolvedChange(Resolver(floor, before, profiles), Resolver(floor, after, profiles),
                          {{"leash-vader", "leash-iris"}, true});
  ASSERT_EQ(change.loosenings.size(), 1u);
  EXPECT_EQ(change.loosenings[0].subject, "agent:leash-vader");
  EXPECT_THAT(Tokens(change.ByToken()), ElementsAre("unset.deny:commands:python3"));
  EXPECT_THAT(change.For("agent:leash-iris"), IsEmpty());
}

TEST(JudgeResolvedChange, ASubjectHeldClosedBeforeIsLoosenedWhenItResolvesAfter) {
  const leash::v1::Config floor = Floor("user: fido");
  ProfileLibrary profiles = Library({{"none", "{}"}});
  Bindings before;
  before.Put({"agent:leash-vader", "gone", {}});
  Bindings after;
  after.Put({"agent:leash-vader", "none", {}});
  ResolvedChange change = JudgeResolvedChange(Resolver(floor, before, profiles),
                                              Resolver(floor, after, profiles),
                                              {{"leash-vader"}, false});
  EXPECT_THAT(Tokens(change.ByToken()), ElementsAre("fail_closed:gone"));
}

TEST(JudgeResolvedChange, ASubjectDeniedEverythingAfterIsATighteningSaidOutLoud) {
  const leash::v1::Config floor = Floor("user: fido");
  ProfileLibrary profiles = Library({{"none", "{}"}});
  Bindings before;
  before.Put({"agent:leash-vader", "none", {}});
  Bindings after;
  after.Put({"agent:leash-vader", "gone", {}});
  ResolvedChange change = JudgeResolvedChange(Resolver(floor, before, profiles),
                                              Resolver(floor, after, profiles),
                                              {{"leash-vader"}, false});
  EXPECT_THAT(change.loosenings, IsEmpty());
  EXPECT_THAT(change.notices, ElementsAre(HasSubstr("agent:leash-vader does not resolve")));
}

TEST(JudgeResolvedChange, TheConfiguredUserIsJudgedByItsOwnName) {
  const leash::v1::Config floor = Floor("user: fido\ncommands: {mode: blacklist}");
  ProfileLibrary profiles = Library({{"no-py", "commands: {deny: [python3]}"}});
  Bindings before;
  before.Put({"global", "no-py", {}});
  Bindings after;
  ResolvedChange change = JudgeResolvedChange(Resolver(floor, before, profiles),
                                              Resolver(floor, after, profiles), {{}, true});
  ASSERT_EQ(change.loosenings.size(), 1u);
  EXPECT_EQ(change.loosenings[0].subject, "user:fido");
}

TEST(ReachedAgents, DiscoveredAgentsThenEveryAgentABindingNamesOnce) {
  Bindings before;
  before.Put({"agent:b", "p", {}});
  before.Put({"global", "p", {}});
  Bindings after;
  after.Put({"agent:c", "p", {}});
  after.Put({"agent:a", "p", {}});
  EXPECT_THAT(ReachedAgents({"a", "b"}, before, after), ElementsAre("a", "b", "c"));
}

}  // namespace
}  // namespace leash::engine
