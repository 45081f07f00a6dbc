// ReDoS and resource adversaries, each up to the default 1 MiB bound: long runs of near-
// matches for every detector family, 1 MiB of one character, huge numbers of strings and
// keys, and nesting far past the limit. Every pattern is RE2 (linear time), so these finish
// well inside any bound; this test asserts what they are answered (their timings are in
// inspect_benchmark, not asserted here).
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/compiled_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools_api/inputs.h"
#include "tools_api/testing/fixtures.h"
#include "tools_api/tool_checker.h"

namespace leash::tools {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = 1 << 20;

const ToolChecker& Checker() { return testing::SharedChecker(); }

const engine::CompiledPolicy& Policy() {
  static const engine::CompiledPolicy* const policy =
      new engine::CompiledPolicy(testing::PolicyAllowing({"shell"}));
  return *policy;
}

// `unit` repeated inside one JSON string, filling (just under) 1 MiB.
std::string OneString(absl::string_view unit) {
  std::string s = "\"";
  while (s.size() + unit.size() + 1 <= kMiB) s.append(unit.data(), unit.size());
  s += "\"";
  return s;
}

struct Adversary {
  const char* name;
  std::string json;
  bool allowed;
  size_t total_findings;
};

std::vector<Adversary> Adversaries() {
  return {
      {"one MiB of a", OneString("a"), true, 0},
      {"github prefix one short, repeated", OneString("ghp_abcdefghijklmnopqrstuvwxyz012345678 "),
       true, 0},
      {"github prefix with no separator", OneString("ghp_"), true, 0},
      {"aws prefix one short, repeated", OneString("AKIAABCDEFGHIJKLMNO "), true, 0},
      {"anthropic prefix, repeated", OneString("sk-ant-api03-"), true, 0},
      {"openai-looking words, repeated", OneString("sk-abcdefghijklmnopqrstuvwxyzabcdefgh "), true,
       0},
      {"unsigned jwts, repeated", OneString("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0. "), true, 0},
      {"key assignment without value", OneString("password="), true, 0},
      {"low-entropy assignments", OneString("token=aaaaaaaaaaaaa "), true, 0},
      {"email local parts without domain", OneString("a.b+c@"), true, 0},
      {"email without tld", OneString("a@b.c-"), true, 0},
      {"digit run", OneString("4"), true, 0},
      {"card-like groups failing luhn", OneString("4556 7375 8689 9856 "), true, 0},
      {"ssn-like dashes", OneString("000-00-0000 "), true, 0},
      {"rm without root, repeated", OneString("rm -rf ./x "), true, 0},
      {"rm flags forever", OneString("rm -r -f -v "), true, 0},
      {"chmod without mode", OneString("chmod "), true, 0},
      {"sudoers reads", OneString("cat /etc/sudoers "), true, 0},
      {"pem header without body", OneString("-----BEGIN PRIVATE KEY-----"), false, 1},
      {"sudo, repeated", OneString("sudo "), false, (kMiB - 2) / 5},
  };
}

class AdversaryTest : public ::testing::TestWithParam<Adversary> {};

TEST_P(AdversaryTest, AnsweredAsExpected) {
  const Adversary& a = GetParam();
  ASSERT_LE(a.json.size(), kMiB);
  const ToolCheckResult r = Checker().CheckJson(Policy(), "shell", a.json);
  EXPECT_EQ(r.decision.allowed(), a.allowed) << r.decision.reason;
  EXPECT_EQ(r.total_findings, a.total_findings) << r.decision.reason;
  EXPECT_LE(r.findings.size(), kMaxReportedFindings);
  EXPECT_LE(r.masked_inputs.size(), kMaxMaskedInputsBytes + 20);
}

std::string AdversaryName(const ::testing::TestParamInfo<Adversary>& info) {
  std::string name = absl::StrCat(info.index, "_");
  for (char c : std::string(info.param.name)) name.push_back(isalnum(c) ? c : '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(OneMiB, AdversaryTest, ::testing::ValuesIn(Adversaries()), AdversaryName);

TEST(AdversaryShapeTest, ManySmallStrings) {
  std::string json = "[";
  while (json.size() < kMiB - 16) absl::StrAppend(&json, json.size() > 1 ? "," : "", "\"ab\"");
  json += "]";
  const ToolCheckResult r = Checker().CheckJson(Policy(), "shell", json);
  EXPECT_TRUE(r.decision.allowed()) << r.decision.reason;
}

TEST(AdversaryShapeTest, ManyKeys) {
  std::string json = "{";
  for (int i = 0; json.size() < kMiB - 32; ++i) {
    absl::StrAppend(&json, i ? "," : "", "\"key", i, "\":", i);
  }
  json += "}";
  const ToolCheckResult r = Checker().CheckJson(Policy(), "shell", json);
  EXPECT_TRUE(r.decision.allowed()) << r.decision.reason;
}

TEST(AdversaryShapeTest, LongArgvIsStillInspectedAsOneLine) {
  std::string json = R"(["rm")";
  for (int i = 0; i < 1000; ++i) json += R"(,"-v")";
  json += R"(,"-rf","/"])";
  const ToolCheckResult r = Checker().CheckJson(Policy(), "shell", json);
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("rm_rf_root at $"));
}

TEST(AdversaryShapeTest, OneMiBOfOpeningBracketsIsRefused) {
  for (const char* unit : {"[", "{\"a\":"}) {
    std::string json;
    while (json.size() < kMiB - 8) json += unit;
    const ToolCheckResult r = Checker().CheckJson(Policy(), "shell", json);
    EXPECT_FALSE(r.decision.allowed());
    EXPECT_THAT(r.decision.reason, HasSubstr("inputs nest deeper than 32 levels")) << unit;
  }
}

TEST(AdversaryShapeTest, OneMiBOfNestedValueBytesIsRefused) {
  // Value{list_value{values: Value{...}}} repeated as deep as 1 MiB allows, as wire bytes.
  const std::string bytes = testing::NestedListValueBytesUpTo(kMiB);
  const ToolCheckResult r =
      Checker().Check(Policy(), "shell", InputsFormat::kSerializedValue, bytes);
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("inputs nest deeper than 32 levels"));
}

}  // namespace
}  // namespace leash::tools
