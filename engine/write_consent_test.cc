// Consent for every write (docs/ARCHITECTURE.md, rule P12): a bind over an existing binding, a
// global bind and a profile re-save are judged by each reached subject resolved before and
// after, like an unbind, on top of the floor check. One table, every write kind, with and
// without the acks the refusal names; each refused case's re-run line is then run as written.
#include <string>
#include <vector>

#include "engine/consent.h"
#include "engine/refusal.h"
#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Fragment;
using ::leash::engine::testing::Library;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr char kFloor[] = R"(
user: fido
network: {mode: whitelist, allow: [github.com]}
commands: {mode: blacklist, deny: [ssh]}
)";

constexpr char kNoPy[] = "commands: {deny: [python3]}";
constexpr char kNoPaste[] = "commands: {deny: [xclip]}";
constexpr char kStrict[] = "commands: {deny: [python3, xclip]}";

enum class Write { kAgentBind, kGlobalBind, kProfileSave };

struct Case {
  std::string name;
  Write write;
  // The binding in force before the write (scope, profile); empty scope: none.
  std::string bound_scope;
  std::string bound_profile;
  // The write: the profile bound, or saved (with `yaml`).
  std::string profile;
  std::string yaml;
  std::vector<std::string> acks;
  // The tokens the refusal names (empty: written).
  std::vector<std::string> refused;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

struct Outcome {
  std::optional<leash::v1::Refusal> refusal;
};

Outcome Judge(const Case& c) {
  const leash::v1::Config floor = Floor(kFloor);
  ProfileLibrary profiles = Library({{"no-py", kNoPy}, {"no-paste", kNoPaste}, {"strict", kStrict}});
  Bindings bindings;
  if (!c.bound_scope.empty()) bindings.Put({c.bound_scope, c.bound_profile, {}});
  const Resolver current(floor, bindings, profiles);
  const std::vector<std::string> agents = {"leash-vader"};
  switch (c.write) {
    case Write::kAgentBind:
      return {JudgeBind(current, Scope::Agent("leash-vader"), c.profile,
                        *profiles.at(c.profile), c.acks, agents)
                  .refusal};
    case Write::kGlobalBind:
      return {JudgeBind(current, Scope::Global(), c.profile, *profiles.at(c.profile), c.acks,
                        agents)
                  .refusal};
    case Write::kProfileSave:
      return {JudgeProfileEdit(current, c.profile, Fragment(c.yaml), c.acks, "p.yaml", agents)
                  .refusal};
  }
  return {};
}

std::vector<std::string> Tokens(const leash::v1::Refusal& refusal) {
  std::vector<std::string> out;
  for (const leash::v1::Loosening& l : refusal.loosenings()) out.push_back(l.ack_token());
  return out;
}

// The --ack values of a re-run line, as the shell would pass them.
std::vector<std::string> RerunAcks(const std::string& rerun) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = rerun.find("--ack '", at)) != std::string::npos) {
    at += 7;
    const size_t end = rerun.find('\'', at);
    out.push_back(rerun.substr(at, end - at));
    at = end;
  }
  return out;
}

class ConsentForEveryWrite : public ::testing::TestWithParam<Case> {};

TEST_P(ConsentForEveryWrite, EachReachedSubjectIsJudgedBeforeAndAfter) {
  const Case& c = GetParam();
  Outcome outcome = Judge(c);
  if (c.refused.empty()) {
    EXPECT_FALSE(outcome.refusal.has_value())
        << c.name << ": " << (outcome.refusal ? RenderRefusal(*outcome.refusal) : "");
    return;
  }
  ASSERT_TRUE(outcome.refusal.has_value()) << c.name << ": written, expected a refusal";
  EXPECT_EQ(outcome.refusal->kind(), "loosening");
  EXPECT_THAT(Tokens(*outcome.refusal), ElementsAreArray(c.refused));
  if (outcome.refusal->rerun().empty()) return;  // a global binding's consent: no line
  // The printed re-run line, run as written, is not refused.
  Case again = c;
  again.acks = RerunAcks(outcome.refusal->rerun());
  Outcome rerun = Judge(again);
  EXPECT_FALSE(rerun.refusal.has_value())
      << c.name << ": the re-run line " << outcome.refusal->rerun() << " is refused: "
      << RenderRefusal(*rerun.refusal);
}

INSTANTIATE_TEST_SUITE_P(
    Writes, ConsentForEveryWrite,
    ::testing::Values(
        // agent: a rebind drops the old binding's deny.
        Case{"RebindDroppingADeny", Write::kAgentBind, "agent:leash-vader", "no-py", "no-paste",
             "", {}, {"unset.deny:commands:python3"}},
        Case{"RebindDroppingADenyAcked", Write::kAgentBind, "agent:leash-vader", "no-py",
             "no-paste", "", {"unset.deny:commands:python3"}, {}},
        Case{"RebindThatOnlyTightens", Write::kAgentBind, "agent:leash-vader", "no-py",
             "strict", "", {}, {}},
        Case{"FirstBindThatTightens", Write::kAgentBind, "", "", "no-py", "", {}, {}},
        // global: every subject resolved before and after.
        Case{"GlobalRebindDroppingADeny", Write::kGlobalBind, "global", "no-py", "no-paste", "",
             {}, {"unset.deny:commands:python3"}},
        Case{"GlobalRebindDroppingADenyAcked", Write::kGlobalBind, "global", "no-py",
             "no-paste", "", {"unset.deny:commands:python3"}, {}},
        Case{"GlobalRebindThatOnlyTightens", Write::kGlobalBind, "global", "no-py", "strict",
             "", {}, {}},
        // profile: a re-save drops a deny from every agent bound to it.
        Case{"ProfileResaveDroppingADeny", Write::kProfileSave, "agent:leash-vader", "no-py",
             "no-py", "commands: {deny: [xclip]}", {},
             {"agent:leash-vader=unset.deny:commands:python3"}},
        Case{"ProfileResaveDroppingADenyAcked", Write::kProfileSave, "agent:leash-vader",
             "no-py", "no-py", "commands: {deny: [xclip]}",
             {"agent:leash-vader=unset.deny:commands:python3"}, {}},
        Case{"ProfileResaveThatOnlyTightens", Write::kProfileSave, "agent:leash-vader", "no-py",
             "no-py", "commands: {deny: [python3, xclip]}", {}, {}},
        // A subject reached through the global binding: consent a save never takes.
        Case{"GlobalProfileResaveDroppingADeny", Write::kProfileSave, "global", "no-py", "no-py",
             "commands: {deny: [xclip]}", {}, {""}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ConsentForEveryWrite, ARebindSaysWhatItReplacesInItsRefusal) {
  Case c{"", Write::kAgentBind, "agent:leash-vader", "no-py", "no-paste", "", {}, {}};
  Outcome outcome = Judge(c);
  ASSERT_TRUE(outcome.refusal.has_value());
  EXPECT_THAT(outcome.refusal->message(),
              HasSubstr("replaces agent:leash-vader's binding to 'no-py'"));
  EXPECT_EQ(outcome.refusal->rerun(),
            "sudo leash bind agent:leash-vader no-paste --ack 'unset.deny:commands:python3'");
}

}  // namespace
}  // namespace leash::engine
