// The re-run line always runs (docs/ARCHITECTURE.md, rule P13): a refusal judges the write
// completely — consent and validate — and the re-run line it prints, run verbatim, is not
// refused; when validate would refuse it, the refusal lists those findings and prints no line.
// A property test over generated floor/profile pairs, for every write kind, and the case that
// showed it: a profile switching a surface to blacklist over the floor's allow list.
#include "engine/complete_judgement.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/refusal.h"
#include "engine/testing/tiers_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::leash::engine::testing::Floor;
using ::leash::engine::testing::Fragment;
using ::testing::HasSubstr;

const std::vector<std::string> kAgents = {"leash-vader", "leash-iris"};

PolicyJudge JudgeOver(const leash::v1::Config& floor) {
  return [floor](const Bindings& bindings, const ProfileLibrary& profiles) {
    return ValidatePolicy(floor, bindings, profiles, kAgents, nullptr);
  };
}

// The --ack values of a printed re-run line, unquoted as the shell would.
std::vector<std::string> AcksOf(const std::string& rerun) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = rerun.find(" --ack '", at)) != std::string::npos) {
    at += 8;
    std::string value;
    while (at < rerun.size()) {
      if (rerun.compare(at, 4, "'\\''") == 0) {
        value += '\'';
        at += 4;
      } else if (rerun[at] == '\'') {
        break;
      } else {
        value += rerun[at++];
      }
    }
    out.push_back(value);
  }
  return out;
}

TEST(TheRerunLineAlwaysRuns, ABlacklistOverTheFloorsAllowListListsTheFindingAndPrintsNoLine) {
  const leash::v1::Config floor =
      Floor("user: fido\nfilesystem: {mode: whitelist, allow: [/srv/work]}\n");
  const leash::v1::Config open = Fragment("filesystem: {mode: blacklist}");
  Bindings bindings;
  ProfileLibrary profiles;
  profiles.emplace("open-fs", open);
  const Resolver current(floor, bindings, profiles);
  BindJudgement j = JudgeBindCompletely(current, Scope::Agent("leash-vader"), "open-fs", open, {},
                                        kAgents, JudgeOver(floor));
  ASSERT_TRUE(j.refusal.has_value());
  EXPECT_EQ(j.refusal->kind(), "loosening");
  ASSERT_GT(j.refusal->loosenings_size(), 0);
  EXPECT_EQ(j.refusal->loosenings(0).ack_token(), "filesystem.mode:blacklist");
  ASSERT_GT(j.refusal->findings_size(), 0) << RenderRefusal(*j.refusal);
  EXPECT_THAT(j.refusal->findings(0).message(), HasSubstr("never consulted"));
  EXPECT_EQ(j.refusal->rerun(), "");
  EXPECT_THAT(j.refusal->message(), HasSubstr("With that consent it would still be refused"));
}

// --- the property -------------------------------------------------------------------------

struct Generator {
  std::mt19937 rng;
  bool Coin() { return rng() % 2 == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& from) { return from[rng() % from.size()]; }
  std::vector<std::string> Subset(const std::vector<std::string>& from) {
    std::vector<std::string> out;
    for (const std::string& entry : from) {
      if (Coin()) out.push_back(entry);
    }
    return out;
  }
  // One surface's YAML, each key written or not (a profile), or always a mode (a floor).
  std::string Surface(const std::string& name, const std::vector<std::string>& entries,
                      bool floor) {
    std::vector<std::string> keys;
    if (floor || Coin()) keys.push_back(absl::StrCat("mode: ", Coin() ? "whitelist" : "blacklist"));
    if (floor || Coin()) keys.push_back(absl::StrCat("allow: [", absl::StrJoin(Subset(entries), ", "), "]"));
    if (floor || Coin()) keys.push_back(absl::StrCat("deny: [", absl::StrJoin(Subset(entries), ", "), "]"));
    if (keys.empty()) return "";
    return absl::StrCat(name, ": {", absl::StrJoin(keys, ", "), "}\n");
  }
  std::string Policy(bool floor) {
    std::string yaml = floor ? "user: fido\n" : "";
    if (floor || Coin()) absl::StrAppend(&yaml, "fail_mode: ", Coin() ? "open" : "closed", "\n");
    absl::StrAppend(&yaml, Surface("network", {"a.example", "b.example"}, floor));
    absl::StrAppend(&yaml, Surface("filesystem", {"/srv/a", "/srv/b"}, floor));
    absl::StrAppend(&yaml, Surface("commands", {"python3", "xclip"}, floor));
    return yaml.empty() ? "{}" : yaml;
  }
};

struct Tally {
  int refused_with_line = 0;
  int completed = 0;
};

// A refusal's line, run verbatim, is not refused; a consent refusal without one says why.
template <typename Write>
void CheckRerun(const std::string& what, const std::optional<leash::v1::Refusal>& refusal,
                const Write& write, Tally& tally) {
  if (!refusal || refusal->kind() != "loosening") return;
  if (refusal->rerun().empty()) {
    if (refusal->findings_size() > 0) ++tally.completed;
    return;
  }
  ++tally.refused_with_line;
  std::optional<leash::v1::Refusal> again = write(AcksOf(refusal->rerun()));
  EXPECT_FALSE(again.has_value()) << what << "\nthe re-run line " << refusal->rerun()
                                  << "\nwas refused:\n" << RenderRefusal(*again)
                                  << "\nfirst refusal:\n" << RenderRefusal(*refusal);
}

TEST(TheRerunLineAlwaysRuns, EveryPrintedReRunLineOfGeneratedFloorProfilePairsIsNotRefused) {
  Generator gen{std::mt19937(20261207)};
  Tally tally;
  for (int round = 0; round < 400; ++round) {
    const std::string floor_yaml = gen.Policy(true);
    const std::string p_yaml = gen.Policy(false);
    const std::string q_yaml = gen.Policy(false);
    const leash::v1::Config floor = Floor(floor_yaml);
    const leash::v1::Config p = Fragment(p_yaml);
    const leash::v1::Config q = Fragment(q_yaml);
    const PolicyJudge judge = JudgeOver(floor);
    const std::string what =
        absl::StrCat("floor:\n", floor_yaml, "p:\n", p_yaml, "\nq:\n", q_yaml, "\n");
    ProfileLibrary profiles;
    profiles.emplace("p", p);
    profiles.emplace("q", q);
    // The agent bound to q with the consent it needs (else the world is not one leashd has).
    Bindings on_q;
    {
      const Resolver empty(floor, Bindings(), profiles);
      std::vector<std::string> tokens;
      for (const FieldChange& c : BindingLoosenings(empty, Scope::Agent("leash-vader"), q)) {
        tokens.push_back(c.ack_token);
      }
      on_q.Put({"agent:leash-vader", "q", tokens});
    }
    // Each re-run is judged on its own, as leashd judges a write: consent, then validate of
    // the policy it would leave.
    auto validate = [&](const Bindings& b0, const ProfileLibrary& p0, const Bindings& b1,
                        const ProfileLibrary& p1) {
      return RefuseNewErrors("the re-run", judge(b0, p0), judge(b1, p1));
    };
    ProfileLibrary saved = profiles;
    saved.insert_or_assign("q", p);
    Bindings none;
    for (const Bindings* before : {&none, &on_q}) {
      const Resolver current(floor, *before, profiles);
      for (const Scope& scope : {Scope::Agent("leash-vader"), Scope::Global()}) {
        auto bind = [&](const std::vector<std::string>& acks) -> std::optional<leash::v1::Refusal> {
          BindJudgement j = JudgeBind(current, scope, "p", p, acks, kAgents);
          if (j.refusal) return j.refusal;
          Bindings after = *before;
          after.Put(j.binding);
          return validate(*before, profiles, after, profiles);
        };
        CheckRerun(absl::StrCat(what, "bind ", scope.ToString(), " p"),
                   JudgeBindCompletely(current, scope, "p", p, {}, kAgents, judge).refusal, bind,
                   tally);
      }
    }
    {
      const Resolver current(floor, on_q, profiles);
      auto save = [&](const std::vector<std::string>& acks) -> std::optional<leash::v1::Refusal> {
        ProfileEditJudgement j = JudgeProfileEdit(current, "q", p, acks, "q.yaml", kAgents);
        if (j.refusal) return j.refusal;
        return validate(on_q, profiles, j.bindings, saved);
      };
      CheckRerun(absl::StrCat(what, "profile save q as p"),
                 JudgeProfileEditCompletely(current, "q", p, {}, "q.yaml", kAgents, judge).refusal,
                 save, tally);
      auto unbind = [&](const std::vector<std::string>& acks) -> std::optional<leash::v1::Refusal> {
        UnbindJudgement j = JudgeUnbind(floor, on_q, profiles, "agent:leash-vader", kAgents, acks);
        if (j.refusal) return j.refusal;
        Bindings after = on_q;
        after.Remove("agent:leash-vader");
        return validate(on_q, profiles, after, profiles);
      };
      CheckRerun(absl::StrCat(what, "unbind agent:leash-vader"),
                 JudgeUnbindCompletely(floor, on_q, profiles, "agent:leash-vader", kAgents, {},
                                       judge)
                     .refusal,
                 unbind, tally);
    }
  }
  // Not vacuous: the generator reaches both kinds of refusal.
  EXPECT_GT(tally.refused_with_line, 100);
  EXPECT_GT(tally.completed, 5);
}

}  // namespace
}  // namespace leash::engine
