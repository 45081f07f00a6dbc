// The loosening table, one named case per row (see the table in loosening.h), and the ack
// token grammar.
#include "engine/loosening.h"

#include <string>
#include <tuple>
#include <vector>

#include "engine/config_defaults.h"
#include "engine/config_yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::engine {
namespace {

using ::testing::HasSubstr;

leash::v1::Config Effective(const std::string& yaml) {
  absl::StatusOr<leash::v1::Config> config = ParseConfigYaml(yaml, ConfigKind::kFloor, "test");
  EXPECT_TRUE(config.ok()) << config.status();
  return WithDefaults(config.ok() ? *config : leash::v1::Config());
}

struct Expected {
  Effect effect;
  std::string field;
  std::string value;
};

struct Row {
  std::string name;
  std::string before;
  std::string after;
  std::vector<Expected> changes;
};

class LooseningTable : public ::testing::TestWithParam<Row> {};

TEST_P(LooseningTable, ClassifiesRow) {
  const Row& row = GetParam();
  std::vector<FieldChange> changes = ClassifyChanges(Effective(row.before), Effective(row.after));
  ASSERT_EQ(changes.size(), row.changes.size()) << row.name;
  for (size_t i = 0; i < changes.size(); ++i) {
    const Expected& want = row.changes[i];
    EXPECT_EQ(changes[i].effect, want.effect) << row.name << " #" << i << ": "
                                              << changes[i].message;
    EXPECT_EQ(changes[i].field, want.field) << row.name;
    EXPECT_EQ(changes[i].value, want.value) << row.name;
    EXPECT_FALSE(changes[i].message.empty());
    if (want.effect == Effect::kLoosen) {
      EXPECT_EQ(changes[i].ack_token, want.field + ":" + want.value);
      // Every token the engine hands out parses back as a consent token.
      EXPECT_TRUE(ParseAckToken(changes[i].ack_token).ok()) << changes[i].ack_token;
    } else {
      EXPECT_EQ(changes[i].ack_token, "");
    }
  }
}

constexpr Effect kLoosen = Effect::kLoosen;
constexpr Effect kTighten = Effect::kTighten;
constexpr Effect kNeutral = Effect::kNeutral;

INSTANTIATE_TEST_SUITE_P(
    Rows, LooseningTable,
    ::testing::Values(
        Row{"NetworkWhitelistToBlacklistLoosens", "network: {mode: whitelist}",
            "network: {mode: blacklist}", {{kLoosen, "network.mode", "blacklist"}}},
        Row{"FilesystemWhitelistToBlacklistLoosens", "filesystem: {mode: whitelist}",
            "filesystem: {mode: blacklist}", {{kLoosen, "filesystem.mode", "blacklist"}}},
        Row{"CommandsWhitelistToBlacklistLoosens", "commands: {mode: whitelist}",
            "commands: {mode: blacklist}", {{kLoosen, "commands.mode", "blacklist"}}},
        Row{"ToolsWhitelistToBlacklistLoosens", "tools: {mode: whitelist}",
            "tools: {mode: blacklist}", {{kLoosen, "tools.mode", "blacklist"}}},
        Row{"BlacklistToWhitelistTightens", "network: {mode: blacklist}",
            "network: {mode: whitelist}", {{kTighten, "network.mode", "whitelist"}}},
        Row{"FailModeClosedToOpenLoosens", "fail_mode: closed", "fail_mode: open",
            {{kLoosen, "fail_mode", "open"}}},
        Row{"FailModeAbsentToOpenLoosens", "{}", "fail_mode: open",
            {{kLoosen, "fail_mode", "open"}}},
        Row{"FailModeTypoCountsAsClosedSoTypoToOpenLoosens", "fail_mode: clsoed",
            "fail_mode: open", {{kLoosen, "fail_mode", "open"}}},
        Row{"FailModeOpenToClosedTightens", "fail_mode: open", "fail_mode: closed",
            {{kTighten, "fail_mode", "closed"}}},
        Row{"FailModeOpenToTypoTightens", "fail_mode: open", "fail_mode: opne",
            {{kTighten, "fail_mode", "opne"}}},
        Row{"FailModeClosedToTypoIsNeutral", "fail_mode: closed", "fail_mode: clsoed",
            {{kNeutral, "fail_mode", "clsoed"}}},
        Row{"AllowEntryAddedInWhitelistLoosens", "network: {allow: [github.com]}",
            "network: {allow: [github.com, openai.com]}",
            {{kLoosen, "network.allow", "openai.com"}}},
        Row{"FilesystemAllowEntryAddedInWhitelistLoosens", "filesystem: {allow: [/work]}",
            "filesystem: {allow: [/work, /home]}", {{kLoosen, "filesystem.allow", "/home"}}},
        Row{"CommandsAllowEntryAddedInWhitelistLoosens", "commands: {allow: [git]}",
            "commands: {allow: [git, curl]}", {{kLoosen, "commands.allow", "curl"}}},
        Row{"ToolsAllowEntryAddedInWhitelistLoosens", "tools: {allow: [search]}",
            "tools: {allow: [search, web_fetch]}", {{kLoosen, "tools.allow", "web_fetch"}}},
        Row{"AllowEntryAddedInBlacklistIsNeutral", "network: {mode: blacklist, allow: []}",
            "network: {mode: blacklist, allow: [openai.com]}",
            {{kNeutral, "network.allow", "openai.com"}}},
        Row{"AllowEntryAddedAsSurfaceLeavesBlacklistIsNeutral", "network: {mode: blacklist}",
            "network: {mode: whitelist, allow: [openai.com]}",
            {{kTighten, "network.mode", "whitelist"},
             {kNeutral, "network.allow", "openai.com"}}},
        Row{"AllowEntryRemovedInWhitelistTightens", "network: {allow: [github.com, openai.com]}",
            "network: {allow: [github.com]}", {{kTighten, "network.allow", "openai.com"}}},
        Row{"AllowEntryRemovedInBlacklistIsNeutral",
            "network: {mode: blacklist, allow: [openai.com]}",
            "network: {mode: blacklist, allow: []}", {{kNeutral, "network.allow", "openai.com"}}},
        Row{"DenyEntryRemovedLoosensAsUnsetDeny", "commands: {deny: [ssh, rm]}",
            "commands: {deny: [rm]}", {{kLoosen, "unset.deny", "commands:ssh"}}},
        Row{"DenyListEmptiedLoosensEachEntry", "network: {deny: [evil.com, 10.0.0.0/8]}",
            "network: {deny: []}",
            {{kLoosen, "unset.deny", "network:evil.com"},
             {kLoosen, "unset.deny", "network:10.0.0.0/8"}}},
        Row{"DenyEntryAddedTightens", "filesystem: {deny: []}",
            "filesystem: {deny: [/etc/shadow]}", {{kTighten, "filesystem.deny", "/etc/shadow"}}},
        Row{"UdpDropToAllowLoosens", "network: {udp: drop}", "network: {udp: allow}",
            {{kLoosen, "network.udp", "allow"}}},
        Row{"NetworkAuditOnLoosens", "{}", "network: {audit: true}",
            {{kLoosen, "network.audit", "true"}}},
        Row{"FilesystemAuditOnLoosens", "filesystem: {audit: false}", "filesystem: {audit: true}",
            {{kLoosen, "filesystem.audit", "true"}}},
        Row{"CommandsAuditOnLoosens", "{}", "commands: {audit: true}",
            {{kLoosen, "commands.audit", "true"}}},
        Row{"ToolsAuditOnLoosens", "{}", "tools: {audit: true}",
            {{kLoosen, "tools.audit", "true"}}},
        Row{"AuditOffTightens", "tools: {audit: true}", "tools: {audit: false}",
            {{kTighten, "tools.audit", "false"}}},
        Row{"AuditFalseIsTheDefaultAndChangesNothing", "{}", "network: {audit: false}", {}},
        Row{"UdpAllowToDropTightens", "network: {udp: allow}", "network: {udp: drop}",
            {{kTighten, "network.udp", "drop"}}},
        Row{"InboundDropToAllowLoosens", "network: {inbound: drop}",
            "network: {inbound: allow}", {{kLoosen, "network.inbound", "allow"}}},
        Row{"InboundDefaultToAllowLoosens", "{}", "network: {inbound: allow}",
            {{kLoosen, "network.inbound", "allow"}}},
        Row{"InboundAllowToDropTightens", "network: {inbound: allow}",
            "network: {inbound: drop}", {{kTighten, "network.inbound", "drop"}}},
        Row{"DnsDefaultToResolversLoosens", "{}", "network: {dns: resolvers}",
            {{kLoosen, "network.dns", "resolvers"}}},
        Row{"DnsFilterToResolversLoosens", "network: {dns: filter}",
            "network: {dns: resolvers}", {{kLoosen, "network.dns", "resolvers"}}},
        Row{"DnsResolversToFilterTightens", "network: {dns: resolvers}",
            "network: {dns: filter}", {{kTighten, "network.dns", "filter"}}},
        Row{"DnsFilterWrittenOutIsNoChange", "{}", "network: {dns: filter}", {}},
        Row{"DnsResolverAddedLoosens", "network: {dns_resolvers: [1.1.1.1]}",
            "network: {dns_resolvers: [1.1.1.1, 8.8.8.8]}",
            {{kLoosen, "network.dns_resolvers", "8.8.8.8"}}},
        Row{"DnsResolverRemovedTightens", "network: {dns_resolvers: [1.1.1.1, 8.8.8.8]}",
            "network: {dns_resolvers: [1.1.1.1]}",
            {{kTighten, "network.dns_resolvers", "8.8.8.8"}}},
        Row{"DnsResolversEmptiedLoosensToTheHostsResolvers",
            "network: {dns_resolvers: [1.1.1.1]}", "network: {dns_resolvers: []}",
            {{kLoosen, "network.dns_resolvers", "/etc/resolv.conf"},
             {kTighten, "network.dns_resolvers", "1.1.1.1"}}},
        Row{"DnsResolversSetOverHostResolversTightensAndAddsEach", "network: {}",
            "network: {dns_resolvers: [8.8.8.8]}",
            {{kTighten, "network.dns_resolvers", "/etc/resolv.conf"},
             {kLoosen, "network.dns_resolvers", "8.8.8.8"}}},
        Row{"InspectionBlockToLogLoosens", "tools: {inspect: {secrets: block}}",
            "tools: {inspect: {secrets: log}}", {{kLoosen, "tools.inspect.secrets", "log"}}},
        Row{"InspectionBlockToAllowLoosens", "tools: {inspect: {priv_esc: block}}",
            "tools: {inspect: {priv_esc: allow}}",
            {{kLoosen, "tools.inspect.priv_esc", "allow"}}},
        Row{"InspectionLogToAllowLoosens", "tools: {inspect: {pii: log}}",
            "tools: {inspect: {pii: allow}}", {{kLoosen, "tools.inspect.pii", "allow"}}},
        Row{"InspectionLogToBlockTightens", "tools: {inspect: {pii: log}}",
            "tools: {inspect: {pii: block}}", {{kTighten, "tools.inspect.pii", "block"}}},
        Row{"InspectionAllowToLogTightens", "tools: {inspect: {secrets: allow}}",
            "tools: {inspect: {secrets: log}}", {{kTighten, "tools.inspect.secrets", "log"}}},
        Row{"MaxInputBytesRaisedLoosens", "tools: {max_input_bytes: 1000}",
            "tools: {max_input_bytes: 5000}", {{kLoosen, "tools.max_input_bytes", "5000"}}},
        Row{"MaxInputBytesLoweredTightens", "tools: {max_input_bytes: 5000}",
            "tools: {max_input_bytes: 1000}", {{kTighten, "tools.max_input_bytes", "1000"}}},
        Row{"NetworkEnforcerTurnedOffLoosens", "enforcers: {network: true}",
            "enforcers: {network: false}", {{kLoosen, "enforcers.network", "false"}}},
        Row{"FilesystemEnforcerTurnedOffLoosens", "{}", "enforcers: {filesystem: false}",
            {{kLoosen, "enforcers.filesystem", "false"}}},
        Row{"ToolsEnforcerTurnedOffLoosens", "{}", "enforcers: {tools: false}",
            {{kLoosen, "enforcers.tools", "false"}}},
        Row{"EnforcerTurnedOnTightens", "enforcers: {network: false}", "enforcers: {network: true}",
            {{kTighten, "enforcers.network", "true"}}},
        Row{"LoggingLevelIsNeutral", "logging: {level: info}", "logging: {level: debug}",
            {{kNeutral, "logging.level", "debug"}}},
        Row{"LoggingDecisionsIsNeutral", "logging: {decisions: /var/log/a.jsonl}",
            "logging: {decisions: stdout}", {{kNeutral, "logging.decisions", "stdout"}}},
        Row{"UserIsNeutral", "user: fido", "user: rex", {{kNeutral, "user", "rex"}}},
        Row{"NoChangeIsEmpty", "network: {allow: [a.com]}", "network: {allow: [a.com]}", {}}),
    [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(Loosenings, ListsEveryLooseningNotTheFirst) {
  std::vector<FieldChange> loosenings =
      Loosenings(Effective("network: {allow: [github.com], deny: [evil.com]}"),
                 Effective("fail_mode: open\nnetwork: {allow: [github.com, openai.com], "
                           "deny: [], udp: allow, inbound: allow}\nenforcers: {tools: false}"));
  std::vector<std::string> tokens;
  for (const FieldChange& change : loosenings) tokens.push_back(change.ack_token);
  EXPECT_THAT(tokens, ::testing::ElementsAre("fail_mode:open", "network.allow:openai.com",
                                             "unset.deny:network:evil.com", "network.udp:allow",
                                             "network.inbound:allow",
                                             "enforcers.tools:false"));
}

TEST(Loosenings, WhitelistToBlacklistReportsTheModeNotTheIgnoredAllowList) {
  std::vector<FieldChange> loosenings =
      Loosenings(Effective("network: {mode: whitelist, allow: [a.com]}"),
                 Effective("network: {mode: blacklist, allow: [a.com, b.com]}"));
  ASSERT_EQ(loosenings.size(), 1u);
  EXPECT_EQ(loosenings[0].ack_token, "network.mode:blacklist");
  EXPECT_THAT(loosenings[0].message, HasSubstr("default-allow"));
}

TEST(Loosenings, MessagesAreTheEnginesOwnWords) {
  std::vector<FieldChange> loosenings = Loosenings(
      Effective("commands: {deny: [ssh]}"), Effective("fail_mode: open\ncommands: {deny: []}"));
  ASSERT_EQ(loosenings.size(), 2u);
  EXPECT_EQ(loosenings[0].message,
            "fail_mode goes from closed to open: when an enforcer cannot decide, it allows");
  EXPECT_EQ(loosenings[1].message, "commands.deny loses 'ssh' (unset.deny): it is no longer blocked");
}

TEST(FailClosedRemoval, NeedsItsOwnToken) {
  FieldChange change = FailClosedRemoval("agent:leash-iris", "web-research",
                                         "its profile 'web-research' is deleted");
  EXPECT_EQ(change.effect, Effect::kLoosen);
  EXPECT_EQ(change.ack_token, "fail_closed:web-research");
  EXPECT_THAT(change.message, HasSubstr("denied everything"));
}

TEST(AckToken, ParsesFieldAndValueAtTheFirstColon) {
  absl::StatusOr<AckToken> token = ParseAckToken("unset.deny:network:[2001:db8::1]:443");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->field, "unset.deny");
  EXPECT_EQ(token->value, "network:[2001:db8::1]:443");
  EXPECT_EQ(token->ToString(), "unset.deny:network:[2001:db8::1]:443");
}

TEST(AckToken, RefusesAFieldThatTakesNoConsent) {
  absl::StatusOr<AckToken> token = ParseAckToken("netwrok.allow:openai.com");
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("'netwrok.allow' is not a field"));
  EXPECT_THAT(token.status().message(), HasSubstr("network.allow"));
}

TEST(AckToken, RefusesMissingValueOrColon) {
  EXPECT_FALSE(ParseAckToken("fail_mode").ok());
  EXPECT_FALSE(ParseAckToken("fail_mode:").ok());
  EXPECT_FALSE(ParseAckToken(":open").ok());
  EXPECT_FALSE(ParseAckToken("").ok());
}

TEST(AckToken, RefusesControlCharacters) {
  EXPECT_THAT(ParseAckToken("network.allow:a.com\nfail_mode:open").status().message(),
              HasSubstr("control character"));
}

TEST(AckToken, UnsetDenyNamesItsSurface) {
  EXPECT_TRUE(ParseAckToken("unset.deny:commands:ssh").ok());
  absl::StatusOr<AckToken> bare = ParseAckToken("unset.deny:ssh");
  EXPECT_EQ(bare.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bare.status().message(), HasSubstr("unset.deny:commands:ssh"));
}

TEST(AgentAck, NamesTheAgentItIsFor) {
  absl::StatusOr<AgentAck> ack = ParseAgentAck("agent:leash-iris=network.allow:openai.com");
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->account, "leash-iris");
  EXPECT_EQ(ack->token, "network.allow:openai.com");
}

TEST(AgentAck, GlobalConsentIsNeverTakenByAProfileSave) {
  absl::StatusOr<AgentAck> ack = ParseAgentAck("global=fail_mode:open");
  EXPECT_EQ(ack.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ack.status().message(), HasSubstr("leash bind global"));
}

TEST(AgentAck, RefusesAnAckWithoutAnAgent) {
  EXPECT_THAT(ParseAgentAck("network.allow:openai.com").status().message(),
              HasSubstr("agent:<account>=<field>:<value>"));
  EXPECT_THAT(ParseAgentAck("team:red=fail_mode:open").status().message(),
              HasSubstr("not a policy tier"));
  EXPECT_THAT(ParseAgentAck("agent:Iris=fail_mode:open").status().message(),
              HasSubstr("not a Linux account name"));
}

}  // namespace
}  // namespace leash::engine
