// AppendToYamlList / RemoveFromYamlList / SetYamlScalar: the edit lands where it should and
// nothing else in the text moves (comments, quoting, layout), in flow and block style.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/config_yaml.h"

namespace leash::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

leash::v1::Config Parse(const std::string& yaml) {
  absl::StatusOr<leash::v1::Config> config = ParseConfigYaml(yaml, ConfigKind::kFloor, "t.yaml");
  EXPECT_TRUE(config.ok()) << config.status() << "\n" << yaml;
  return config.ok() ? *config : leash::v1::Config();
}

TEST(AppendToYamlList, FlowListKeepsEverythingElse) {
  const std::string before =
      "# the floor\n"
      "user: fido\n"
      "network: { mode: whitelist, allow: [\"a.example\", 'b.example'], deny: [] }  # web\n";
  absl::StatusOr<std::string> after = AppendToYamlList(before, "network", "allow", "c.example");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "# the floor\n"
            "user: fido\n"
            "network: { mode: whitelist, allow: [\"a.example\", 'b.example', \"c.example\"], "
            "deny: [] }  # web\n");
  EXPECT_THAT(Parse(*after).network().allow().entries(),
              ElementsAre("a.example", "b.example", "c.example"));
}

TEST(AppendToYamlList, EmptyFlowListAndTrailingCommaAndBracketsInsideQuotes) {
  const std::string empty = "user: fido\nnetwork: { allow: [ ], deny: [] }\n";
  absl::StatusOr<std::string> after = AppendToYamlList(empty, "network", "deny", "x.example");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, "user: fido\nnetwork: { allow: [ ], deny: [\"x.example\"] }\n");

  const std::string multiline =
      "user: fido\n"
      "filesystem:\n"
      "  allow: [\n"
      "    \"/srv/[x]\",  # a bracket in a name\n"
      "    /home/fido,\n"
      "  ]\n";
  after = AppendToYamlList(multiline, "filesystem", "allow", "/tmp");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "user: fido\n"
            "filesystem:\n"
            "  allow: [\n"
            "    \"/srv/[x]\",  # a bracket in a name\n"
            "    /home/fido, \"/tmp\"\n"
            "  ]\n");
  EXPECT_THAT(Parse(*after).filesystem().allow().entries(),
              ElementsAre("/srv/[x]", "/home/fido", "/tmp"));
}

TEST(AppendToYamlList, BlockListGetsALineLikeItsLastItem) {
  const std::string before =
      "user: fido\n"
      "# what the agent may reach\n"
      "network:\n"
      "  mode: whitelist   # default-deny\n"
      "  allow:\n"
      "    - a.example     # the docs\n"
      "    - b.example\n"
      "  deny: []\n"
      "tools: { mode: whitelist, allow: [read_file], deny: [] }\n";
  absl::StatusOr<std::string> after = AppendToYamlList(before, "network", "allow", "c.example");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "user: fido\n"
            "# what the agent may reach\n"
            "network:\n"
            "  mode: whitelist   # default-deny\n"
            "  allow:\n"
            "    - a.example     # the docs\n"
            "    - b.example\n"
            "    - \"c.example\"\n"
            "  deny: []\n"
            "tools: { mode: whitelist, allow: [read_file], deny: [] }\n");
  EXPECT_THAT(Parse(*after).network().allow().entries(),
              ElementsAre("a.example", "b.example", "c.example"));
}

TEST(AppendToYamlList, AnItemIsWrittenSoItReadsBackExactly) {
  const std::string before = "user: fido\ncommands: { deny: [] }\n";
  const std::string item = "we\"ird\\name: #1, [x]";
  absl::StatusOr<std::string> after = AppendToYamlList(before, "commands", "deny", item);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_THAT(Parse(*after).commands().deny().entries(), ElementsAre(item));
}

TEST(AppendToYamlList, ShapesItDoesNotEditAreSaidAndLeftToTheCaller) {
  // The list is absent: the caller writes the whole config.
  absl::StatusOr<std::string> after =
      AppendToYamlList("user: fido\nnetwork: { mode: whitelist }\n", "network", "allow", "x");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("network.allow: no such key"));
  // The section is absent.
  after = AppendToYamlList("user: fido\n", "tools", "deny", "x");
  ASSERT_FALSE(after.ok());
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("tools.deny: no such section"));
  // Not a list.
  after = AppendToYamlList("user: fido\nnetwork: { allow: x }\n", "network", "allow", "y");
  ASSERT_FALSE(after.ok());
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("not a list"));
  // A block list whose last item spans lines.
  after = AppendToYamlList("user: fido\nnetwork:\n  allow:\n    - [a, b]\n", "network", "allow",
                           "c");
  ASSERT_FALSE(after.ok());
  // Text that does not parse.
  after = AppendToYamlList("user: [fido\n", "network", "allow", "c");
  ASSERT_FALSE(after.ok());
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("does not parse"));
}

// `leash <surface> remove <entry>`: only the item and its separator go; every other comment,
// quote and line stays.
TEST(RemoveFromYamlList, RemoveKeepsCommentsAndLayoutInAFlowList) {
  const std::string before =
      "# the floor\n"
      "user: fido\n"
      "network: { mode: whitelist, allow: [\"a.example\", 'b.example', c.example], "
      "deny: [] }  # web\n";
  absl::StatusOr<std::string> after = RemoveFromYamlList(before, "network", "allow", "b.example");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "# the floor\n"
            "user: fido\n"
            "network: { mode: whitelist, allow: [\"a.example\", c.example], deny: [] }  # web\n");
  // The last item takes the comma before it; the only item leaves [].
  after = RemoveFromYamlList(*after, "network", "allow", "c.example");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_THAT(*after, HasSubstr("allow: [\"a.example\"], deny"));
  after = RemoveFromYamlList(*after, "network", "allow", "a.example");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "# the floor\n"
            "user: fido\n"
            "network: { mode: whitelist, allow: [], deny: [] }  # web\n");
  EXPECT_TRUE(Parse(*after).network().allow().entries().empty());
}

TEST(RemoveFromYamlList, RemoveKeepsCommentsAndLayoutInAMultiLineFlowList) {
  const std::string before =
      "user: fido\n"
      "filesystem:\n"
      "  allow: [\n"
      "    \"/srv/[x]\",  # a bracket in a name\n"
      "    /home/fido,   # home\n"
      "    /tmp\n"
      "  ]  # end\n";
  absl::StatusOr<std::string> after = RemoveFromYamlList(before, "filesystem", "allow", "/srv/[x]");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "user: fido\n"
            "filesystem:\n"
            "  allow: [\n"
            "    /home/fido,   # home\n"
            "    /tmp\n"
            "  ]  # end\n");
  after = RemoveFromYamlList(*after, "filesystem", "allow", "/tmp");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "user: fido\n"
            "filesystem:\n"
            "  allow: [\n"
            "    /home/fido   # home\n"
            "  ]  # end\n");
  EXPECT_THAT(Parse(*after).filesystem().allow().entries(), ElementsAre("/home/fido"));
}

TEST(RemoveFromYamlList, RemoveKeepsCommentsAndLayoutInABlockList) {
  const std::string before =
      "user: fido\n"
      "# what the agent may not run\n"
      "commands:\n"
      "  mode: blacklist   # default-allow\n"
      "  deny:\n"
      "    - ssh     # no remote shells\n"
      "    - 'curl'  # no downloads\n"
      "    - nc, the tool\n"
      "  allow: []\n";
  absl::StatusOr<std::string> after = RemoveFromYamlList(before, "commands", "deny", "curl");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "user: fido\n"
            "# what the agent may not run\n"
            "commands:\n"
            "  mode: blacklist   # default-allow\n"
            "  deny:\n"
            "    - ssh     # no remote shells\n"
            "    - nc, the tool\n"
            "  allow: []\n");
  after = RemoveFromYamlList(*after, "commands", "deny", "nc, the tool");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_THAT(Parse(*after).commands().deny().entries(), ElementsAre("ssh"));
  // The last item: the key keeps an empty list.
  after = RemoveFromYamlList(*after, "commands", "deny", "ssh");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after,
            "user: fido\n"
            "# what the agent may not run\n"
            "commands:\n"
            "  mode: blacklist   # default-allow\n"
            "  deny:\n"
            "    []\n"
            "  allow: []\n");
  EXPECT_TRUE(Parse(*after).commands().deny().entries().empty());
  EXPECT_EQ(Parse(*after).commands().mode(), leash::v1::MODE_BLACKLIST);
}

TEST(RemoveFromYamlList, RemovesEveryCopyAndSaysWhenThereIsNone) {
  absl::StatusOr<std::string> after =
      RemoveFromYamlList("user: fido\ntools: { deny: [shell, x, shell] }\n", "tools", "deny",
                         "shell");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, "user: fido\ntools: { deny: [x] }\n");
  after = RemoveFromYamlList("user: fido\ntools: { deny: [x] }\n", "tools", "deny", "y");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("not in the list"));
  after = RemoveFromYamlList("user: fido\n", "tools", "deny", "y");
  ASSERT_FALSE(after.ok());
}

TEST(SetYamlScalar, ReplacesOnlyTheValueInFlowAndBlockStyle) {
  absl::StatusOr<std::string> after = SetYamlScalar(
      "user: fido\nnetwork: { mode: whitelist, allow: [] }  # web\n", "network", "mode",
      "blacklist");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, "user: fido\nnetwork: { mode: blacklist, allow: [] }  # web\n");

  after = SetYamlScalar("user: fido\ncommands:\n  mode: whitelist   # strict\n  deny: []\n",
                        "commands", "mode", "blacklist");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, "user: fido\ncommands:\n  mode: blacklist   # strict\n  deny: []\n");
  EXPECT_EQ(Parse(*after).commands().mode(), leash::v1::MODE_BLACKLIST);

  after = SetYamlScalar("user: fido\nfilesystem:\n  mode: 'whitelist'\n", "filesystem", "mode",
                        "blacklist");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, "user: fido\nfilesystem:\n  mode: blacklist\n");

  after = SetYamlScalar("user: fido\nfilesystem: {}\n", "filesystem", "mode", "blacklist");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace leash::engine
