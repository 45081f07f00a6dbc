// bindings.yaml: the shape leashd writes, read back exactly; strict about shape, tolerant of
// content validate reports.
#include "engine/bindings_yaml.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BindingsYaml, RoundTripsEveryBinding) {
  Bindings bindings(std::vector<Binding>{{"global", "strict", {}},
                     {"agent:leash-iris", "web-research",
                      {"network.allow:openai.com", "unset.deny:network:[2001:db8::1]:443",
                       "network.allow:it's \"quoted\""}}});
  const std::string text = EmitBindingsYaml(bindings);
  absl::StatusOr<Bindings> back = ParseBindingsYaml(text, "bindings.yaml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_TRUE(*back == bindings) << text;
}

TEST(BindingsYaml, EmptyFileIsNoBindings) {
  for (const char* text : {"", "# nothing\n", "bindings:\n", "bindings: {}\n"}) {
    absl::StatusOr<Bindings> bindings = ParseBindingsYaml(text, "bindings.yaml");
    ASSERT_TRUE(bindings.ok()) << text;
    EXPECT_TRUE(bindings->entries().empty());
  }
}

TEST(BindingsYaml, KeptSortedByScope) {
  absl::StatusOr<Bindings> bindings = ParseBindingsYaml(
      "bindings:\n  global: {profile: a}\n  agent:leash-b: {profile: b}\n  agent:leash-a: "
      "{profile: c, acks: [fail_mode:open]}\n",
      "b.yaml");
  ASSERT_TRUE(bindings.ok()) << bindings.status();
  std::vector<std::string> scopes;
  for (const Binding& b : bindings->entries()) scopes.push_back(b.scope);
  EXPECT_THAT(scopes, ElementsAre("agent:leash-a", "agent:leash-b", "global"));
  EXPECT_THAT(bindings->Find("agent:leash-a")->acks, ElementsAre("fail_mode:open"));
}

TEST(BindingsYaml, DuplicateScopeRefusedWithPosition) {
  absl::StatusOr<Bindings> bindings = ParseBindingsYaml(
      "bindings:\n  global: {profile: a}\n  global: {profile: b}\n", "bindings.yaml");
  EXPECT_EQ(bindings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bindings.status().message(), HasSubstr("bindings.yaml:3:3"));
  EXPECT_THAT(bindings.status().message(), HasSubstr("appears twice"));
}

TEST(BindingsYaml, ShapeErrorsAreRefused) {
  EXPECT_THAT(ParseBindingsYaml("scopes: {}\n", "b").status().message(),
              HasSubstr("expected bindings"));
  EXPECT_THAT(ParseBindingsYaml("bindings: {global: {}}\n", "b").status().message(),
              HasSubstr("no profile"));
  EXPECT_THAT(ParseBindingsYaml("bindings: {global: {profile: a, color: red}}\n", "b")
                  .status()
                  .message(),
              HasSubstr("unknown key 'color'"));
  EXPECT_THAT(ParseBindingsYaml("bindings: {global: {profile: a, acks: fail_mode:open}}\n", "b")
                  .status()
                  .message(),
              HasSubstr("expected a list"));
  EXPECT_THAT(ParseBindingsYaml("bindings: [\n", "b").status().message(),
              HasSubstr("not valid YAML"));
}

TEST(BindingsYaml, LegacyScopesLoadSoValidateCanReportThem) {
  absl::StatusOr<Bindings> bindings =
      ParseBindingsYaml("bindings: {'team:red': {profile: strict}}\n", "b");
  ASSERT_TRUE(bindings.ok()) << bindings.status();
  EXPECT_NE(bindings->Find("team:red"), nullptr);
}

TEST(BindingsYaml, TextThatIsNotUtf8IsRefused) {
  EXPECT_THAT(ParseBindingsYaml("bindings: {gl\x9f: {profile: a}}\n", "b").status().message(),
              HasSubstr("not UTF-8"));
  // yaml-cpp decodes the \N escape to a lone byte: refused rather than rewritten differently.
  EXPECT_THAT(ParseBindingsYaml("bindings: {global: {profile: a, acks: [\"x\\N\"]}}\n", "b")
                  .status()
                  .message(),
              HasSubstr("ack: not UTF-8"));
}

}  // namespace
}  // namespace leash::engine
