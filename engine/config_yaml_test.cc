#include "engine/config_yaml.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;
using leash::v1::Config;

// A floor that sets every section in flow style, kept verbatim: the shape configs were first
// written in.
constexpr char kSpecExample[] = R"(user: fido
fail_mode: closed
network:    { mode: whitelist, allow: ["github.com", "api.openai.com", "10.0.0.0/8"], deny: [] }
filesystem: { mode: whitelist, allow: ["/home/fido/work", "/tmp/fido"], deny: [] }
commands:   { mode: blacklist, allow: [], deny: ["ssh", "rm", "curl"] }
tools:      { mode: whitelist, allow: ["read_file", "search"], deny: [],
              inspect: { secrets: block, pii: log, priv_esc: block } }
logging:    { level: info, decisions: /var/log/leash/decisions.jsonl }
enforcers:  { network: true, filesystem: true, tools: true }
)";

TEST(ParseConfigYaml, ReadsTheSpecExample) {
  absl::StatusOr<Config> config = ParseConfigYaml(kSpecExample, ConfigKind::kFloor, "leash.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->user(), "fido");
  EXPECT_EQ(config->fail_mode(), "closed");
  EXPECT_EQ(config->network().mode(), leash::v1::MODE_WHITELIST);
  EXPECT_THAT(config->network().allow().entries(),
              ::testing::ElementsAre("github.com", "api.openai.com", "10.0.0.0/8"));
  EXPECT_TRUE(config->network().has_deny());
  EXPECT_EQ(config->network().deny().entries_size(), 0);
  EXPECT_EQ(config->commands().mode(), leash::v1::MODE_BLACKLIST);
  EXPECT_EQ(config->tools().inspect().at("pii"), leash::v1::INSPECT_ACTION_LOG);
  EXPECT_EQ(config->logging().decisions(), "/var/log/leash/decisions.jsonl");
  EXPECT_TRUE(config->enforcers().tools());
}

TEST(ParseConfigYaml, FragmentCarriesOnlyTheKeysItWrites) {
  absl::StatusOr<Config> fragment = ParseConfigYaml(
      "network:\n  allow: [openai.com]\n", ConfigKind::kProfile, "web-research.yaml");
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  EXPECT_TRUE(fragment->network().has_allow());
  EXPECT_FALSE(fragment->network().has_mode());
  EXPECT_FALSE(fragment->network().has_deny());
  EXPECT_FALSE(fragment->has_filesystem());
  EXPECT_FALSE(fragment->has_fail_mode());
}

// Audit is a key of every surface; a tier that does not write it leaves it to the tier beneath.
TEST(ParseConfigYaml, AuditIsReadOnEverySurfaceAndOnlyWhereWritten) {
  absl::StatusOr<Config> fragment = ParseConfigYaml(
      "network: {audit: true}\nfilesystem: {audit: false}\ncommands: {audit: yes}\n"
      "tools: {mode: whitelist}\n",
      ConfigKind::kProfile, "observe.yaml");
  ASSERT_TRUE(fragment.ok()) << fragment.status();
  EXPECT_TRUE(fragment->network().has_audit());
  EXPECT_TRUE(fragment->network().audit());
  EXPECT_TRUE(fragment->filesystem().has_audit());
  EXPECT_FALSE(fragment->filesystem().audit());
  EXPECT_TRUE(fragment->commands().audit());
  EXPECT_FALSE(fragment->tools().has_audit());
}

TEST(ParseConfigYaml, EmptyListDiffersFromAbsentList) {
  absl::StatusOr<Config> fragment =
      ParseConfigYaml("commands: { deny: [] }\n", ConfigKind::kProfile, "p.yaml");
  ASSERT_TRUE(fragment.ok());
  EXPECT_TRUE(fragment->commands().has_deny());
  EXPECT_FALSE(fragment->commands().has_allow());
}

TEST(ParseConfigYaml, EmptyDocumentIsAnEmptyConfig) {
  absl::StatusOr<Config> config = ParseConfigYaml("", ConfigKind::kFloor, "leash.yaml");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->ByteSizeLong(), 0u);
}

struct ErrorCase {
  const char* name;
  const char* yaml;
  ConfigKind kind;
  const char* message;  // must appear in the error, position included
};

class ConfigYamlErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigYamlErrors, NameTheKeyWithLineAndColumn) {
  const ErrorCase& c = GetParam();
  absl::StatusOr<Config> config = ParseConfigYaml(c.yaml, c.kind, "leash.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ConfigYamlErrors,
    ::testing::Values(
        ErrorCase{"UnknownTopLevelKey", "user: fido\nnetwrok: {}\n", ConfigKind::kFloor,
                  "leash.yaml:2:1: unknown key 'netwrok' (expected one of: user, fail_mode,"},
        ErrorCase{"UnknownNestedKey", "network:\n  mode: whitelist\n  alow: []\n",
                  ConfigKind::kFloor, "leash.yaml:3:3: network: unknown key 'alow'"},
        ErrorCase{"BadMode", "network:\n  mode: whitlist\n", ConfigKind::kFloor,
                  "leash.yaml:2:9: network.mode: 'whitlist' is not a mode (whitelist|blacklist)"},
        ErrorCase{"ListWhereValueExpected", "user: [a, b]\n", ConfigKind::kFloor,
                  "leash.yaml:1:7: user: expected a value, got a list"},
        ErrorCase{"ValueWhereListExpected", "filesystem:\n  allow: /tmp\n", ConfigKind::kFloor,
                  "leash.yaml:2:10: filesystem.allow: expected a list of entries, got a value"},
        ErrorCase{"NullList", "filesystem:\n  deny:\n", ConfigKind::kFloor,
                  "filesystem.deny: expected a list of entries, got nothing (null) (write [] "},
        ErrorCase{"NestedListEntry", "commands: { deny: [[ssh]] }\n", ConfigKind::kFloor,
                  "commands.deny: an entry must be a value, got a list"},
        ErrorCase{"BadBool", "enforcers: { network: maybe }\n", ConfigKind::kFloor,
                  "enforcers.network: expected true or false, got 'maybe'"},
        ErrorCase{"BadAudit", "filesystem:\n  audit: sometimes\n", ConfigKind::kProfile,
                  "leash.yaml:2:10: filesystem.audit: expected true or false, got 'sometimes'"},
        ErrorCase{"BadInspectAction", "tools: { inspect: { secrets: warn } }\n",
                  ConfigKind::kFloor, "tools.inspect.secrets: 'warn' is not block|log|allow"},
        ErrorCase{"UnknownInspectCategory", "tools: { inspect: { phone: block } }\n",
                  ConfigKind::kFloor, "unknown key 'phone' (expected one of: secrets, pii, priv_esc)"},
        ErrorCase{"BadUdp", "network: { udp: reject }\n", ConfigKind::kFloor,
                  "network.udp: 'reject' is not drop|allow"},
        ErrorCase{"BadInbound", "network: { inbound: accept }\n", ConfigKind::kFloor,
                  "leash.yaml:1:21: network.inbound: 'accept' is not drop|allow"},
        ErrorCase{"InboundAsBool", "network: { inbound: true }\n", ConfigKind::kFloor,
                  "network.inbound: 'true' is not drop|allow"},
        ErrorCase{"BadDns", "network: { dns: off }\n", ConfigKind::kFloor,
                  "leash.yaml:1:17: network.dns: 'off' is not filter|resolvers"},
        ErrorCase{"BadLevel", "logging: { level: loud }\n", ConfigKind::kFloor,
                  "logging.level: 'loud' is not a level"},
        // leashd opens it from wherever it started, and refuses to start on a relative path.
        ErrorCase{"RelativeDecisionLog", "logging: { decisions: decisions.jsonl }\n",
                  ConfigKind::kFloor,
                  "logging.decisions: 'decisions.jsonl' is not an absolute file path or "
                  "\"stdout\""},
        ErrorCase{"BadMaxInputBytes", "tools: { max_input_bytes: -1 }\n", ConfigKind::kFloor,
                  "tools.max_input_bytes: expected a positive number"},
        ErrorCase{"DuplicateKey", "user: a\nuser: b\n", ConfigKind::kFloor,
                  "leash.yaml:2:1: user: key appears twice"},
        ErrorCase{"TopLevelNotAMapping", "- a\n- b\n", ConfigKind::kFloor,
                  "expected a mapping, got a list"},
        ErrorCase{"MalformedYaml", "network: { mode: [\n", ConfigKind::kFloor,
                  "leash.yaml:2:1: not valid YAML"},
        ErrorCase{"ProfileCannotSetUser", "user: root\n", ConfigKind::kProfile,
                  "user: a profile cannot set the leashed user"},
        ErrorCase{"ProfileCannotSetLogging", "logging: { decisions: stdout }\n",
                  ConfigKind::kProfile, "logging is host-wide"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParseConfigYaml, FailModeTypoLoadsAsWritten) {
  // Treated as closed by the engine and warned about by validate, never an error at load.
  absl::StatusOr<Config> config = ParseConfigYaml("fail_mode: opne\n", ConfigKind::kFloor, "x");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->fail_mode(), "opne");
}

TEST(ParseConfigYaml, InertEntriesLoad) {
  absl::StatusOr<Config> config =
      ParseConfigYaml("network: { allow: ['http://github.com'] }\n", ConfigKind::kFloor, "x");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->network().allow().entries(0), "http://github.com");
}

TEST(EmitConfigYaml, RoundTripsEveryField) {
  absl::StatusOr<Config> config = ParseConfigYaml(kSpecExample, ConfigKind::kFloor, "x");
  ASSERT_TRUE(config.ok());
  config->mutable_network()->set_udp(leash::v1::UDP_MODE_ALLOW);
  config->mutable_network()->set_inbound(leash::v1::INBOUND_MODE_ALLOW);
  config->mutable_network()->set_dns(leash::v1::DNS_MODE_RESOLVERS);
  config->mutable_network()->mutable_dns_resolvers()->add_entries("192.0.2.53");
  config->mutable_network()->mutable_allow()->add_entries("*.github.com");
  config->mutable_network()->mutable_allow()->add_entries("[2001:db8::1]:443");
  config->mutable_tools()->set_max_input_bytes(4096);
  config->mutable_network()->set_audit(true);
  config->mutable_filesystem()->set_audit(false);
  config->mutable_commands()->set_audit(true);
  config->mutable_tools()->set_audit(true);
  const std::string yaml = EmitConfigYaml(*config);
  absl::StatusOr<Config> again = ParseConfigYaml(yaml, ConfigKind::kFloor, "emitted");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << yaml;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*config, *again)) << yaml;
}

TEST(EmitConfigYaml, FragmentEmitsOnlyItsKeys) {
  Config fragment;
  fragment.mutable_commands()->mutable_deny();
  const std::string yaml = EmitConfigYaml(fragment);
  absl::StatusOr<Config> again = ParseConfigYaml(yaml, ConfigKind::kProfile, "emitted");
  ASSERT_TRUE(again.ok()) << yaml;
  EXPECT_TRUE(again->commands().has_deny());
  EXPECT_FALSE(again->commands().has_mode());
  EXPECT_FALSE(again->has_network());
}

// "Raw gRPC failures leak out": a policy text over the cap is refused before it is parsed,
// naming the file, its size and the cap.
TEST(ParseConfigYaml, RawGrpcFailures_TextOverTheCapIsRefusedUnparsedNamingSizeAndCap) {
  std::string yaml = "network: { allow: [";
  while (yaml.size() <= kMaxPolicyYamlBytes) yaml += "\"a.example\", ";
  yaml += "] }\n";
  absl::StatusOr<Config> config = ParseConfigYaml(yaml, ConfigKind::kProfile, "big.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(config.status().message(),
              HasSubstr(absl::StrCat("big.yaml is ", yaml.size(),
                                     " bytes, over the 1048576 "
                                     "bytes (1 MiB) a policy file may be")));
  // At the cap it is parsed (and here refused for what it says, not for its size).
  EXPECT_TRUE(CheckPolicyYamlSize(kMaxPolicyYamlBytes, "x").ok());
}

TEST(ParseConfigYaml, RawGrpcFailures_TextThatIsNotUtf8IsRefusedNamingTheLine) {
  absl::StatusOr<Config> config =
      ParseConfigYaml("network:\n  allow: [\"caf\xe9.example\"]\n", ConfigKind::kProfile, "p.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("p.yaml:2: not UTF-8 text"));
  EXPECT_TRUE(ParseConfigYaml("network:\n  allow: [\"caf\xc3\xa9.example\"]\n",
                              ConfigKind::kProfile, "p.yaml")
                  .ok());
}

// "fail_mode typos carry line:column like every other finding".
TEST(LocateFindings, FailModeTyposCarryLineColumn) {
  const std::string yaml = "user: fido\nfail_mode:   clsoed\nnetwork:\n  mode: blacklist\n";
  leash::v1::Finding typo;
  typo.set_source("floor");
  typo.set_field("fail_mode");
  typo.set_message("fail_mode 'clsoed' is neither closed nor open and is treated as closed");
  leash::v1::Finding nested = typo;
  nested.set_field("network.mode");
  nested.set_message("m");
  leash::v1::Finding other_source = typo;
  other_source.set_source("profile:web");
  leash::v1::Finding absent = typo;
  absent.set_field("tools.allow");
  std::vector<leash::v1::Finding> findings = {typo, nested, other_source, absent};
  LocateFindings(yaml, "/etc/leash/leash.yaml", "floor", findings);
  EXPECT_EQ(findings[0].message(),
            "/etc/leash/leash.yaml:2:14: fail_mode 'clsoed' is neither closed nor open and is "
            "treated as closed");
  EXPECT_EQ(findings[1].message(), "/etc/leash/leash.yaml:4:9: m");
  EXPECT_EQ(findings[2].message(), typo.message());
  EXPECT_EQ(findings[3].message(), typo.message());
}

}  // namespace
}  // namespace leash::engine
