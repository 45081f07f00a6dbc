// ToolChecker: every registry rule (whitelist, blacklist, deny wins, exact names), every
// inspection action per category, the size bound under both fail modes, refusals of bad
// inputs, and that no raw secret leaves the checker.
#include "tools_api/tool_checker.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/compiled_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools_api/testing/fixtures.h"

namespace leash::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const std::string kGhp = absl::StrCat("ghp_", "R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV");

const ToolChecker& Checker() { return testing::SharedChecker(); }

struct PolicyOptions {
  leash::v1::Mode mode = leash::v1::MODE_WHITELIST;
  std::vector<std::string> allow = {"read_file", "shell"};
  std::vector<std::string> deny;
  std::map<std::string, leash::v1::InspectAction> inspect;
  std::optional<uint64_t> max_input_bytes;
  std::string fail_mode = "closed";
  bool tools_enforcer = true;
};

engine::CompiledPolicy Policy(const PolicyOptions& o) {
  leash::v1::Config config;
  config.set_fail_mode(o.fail_mode);
  leash::v1::ToolsPolicy& tools = *config.mutable_tools();
  tools.set_mode(o.mode);
  for (const std::string& e : o.allow) tools.mutable_allow()->add_entries(e);
  for (const std::string& e : o.deny) tools.mutable_deny()->add_entries(e);
  for (const auto& [category, action] : o.inspect) (*tools.mutable_inspect())[category] = action;
  if (o.max_input_bytes) tools.set_max_input_bytes(*o.max_input_bytes);
  config.mutable_enforcers()->set_tools(o.tools_enforcer);
  return engine::CompiledPolicy::Compile(config);
}

std::vector<std::string> Findings(const ToolCheckResult& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) {
    out.push_back(absl::StrCat(f.category(), "/", f.detector(), " ", f.json_path(), " ", f.masked()));
  }
  return out;
}

// --- registry ---

TEST(RegistryTest, WhitelistAllowsAListedName) {
  const ToolCheckResult r = Checker().CheckJson(Policy({}), "read_file", R"({"path":"/tmp/x"})");
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_EQ(r.decision.reason,
            "tools: read_file matches allow entry 'read_file'; inspection found nothing to flag");
  EXPECT_EQ(r.masked_inputs, R"({"path":"/tmp/x"})");
}

TEST(RegistryTest, WhitelistBlocksAnUnlistedNameWithoutReadingItsInputs) {
  const ToolCheckResult r =
      Checker().CheckJson(Policy({}), "web_fetch", absl::StrCat(R"({"token":")", kGhp, R"("})"));
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_EQ(r.decision.reason,
            "tools: web_fetch not in allow list (whitelist); add it to tools.allow to permit it");
  EXPECT_THAT(r.findings, IsEmpty());
  EXPECT_THAT(r.masked_inputs, IsEmpty());
}

TEST(RegistryTest, NamesMatchExactly) {
  for (const char* name : {"read_file2", "Read_File", "read", " read_file"}) {
    EXPECT_FALSE(Checker().CheckJson(Policy({}), name, "{}").decision.allowed()) << name;
  }
}

TEST(RegistryTest, DenyWinsOverAllow) {
  PolicyOptions o;
  o.deny = {"shell"};
  const ToolCheckResult r = Checker().CheckJson(Policy(o), "shell", "{}");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_EQ(r.decision.reason,
            "tools: shell matches deny entry 'shell'; remove it from tools.deny to permit it");
}

TEST(RegistryTest, BlacklistAllowsWhatItDoesNotDeny) {
  PolicyOptions o;
  o.mode = leash::v1::MODE_BLACKLIST;
  o.allow = {};
  o.deny = {"shell"};
  const engine::CompiledPolicy policy = Policy(o);
  EXPECT_TRUE(Checker().CheckJson(policy, "anything", "{}").decision.allowed());
  const ToolCheckResult r = Checker().CheckJson(policy, "shell", "{}");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("matches deny entry 'shell'"));
}

TEST(RegistryTest, EnforcerOffAllowsAndSaysSo) {
  PolicyOptions o;
  o.tools_enforcer = false;
  const ToolCheckResult r = Checker().CheckJson(Policy(o), "anything", R"("sudo su")");
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("the tools enforcer is off (enforcers.tools: false)"));
}

TEST(NameTest, EmptyNameIsRefused) {
  const ToolCheckResult r = Checker().CheckJson(Policy({}), "", "{}");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("names no tool"));
}

TEST(NameTest, OverlongNameIsRefusedAndNotEchoedWhole) {
  const std::string name(10000, 'n');
  const ToolCheckResult r = Checker().CheckJson(Policy({}), name, "{}");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("is 10000 bytes; tool names are at most 256"));
  EXPECT_LT(r.decision.reason.size(), 200u);
}

// --- inspection actions ---

TEST(InspectionTest, SecretBlocksByDefault) {
  const ToolCheckResult r =
      Checker().CheckJson(Policy({}), "shell", absl::StrCat(R"({"env":{"GH":")", kGhp, R"("}})"));
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_EQ(r.decision.reason,
            "tools: shell inputs blocked by inspection: secrets (github_token at $.env.GH; "
            "tools.inspect.secrets is block). Remove the flagged values from the call, or set the "
            "category's tools.inspect action to log if such calls are expected");
  EXPECT_THAT(Findings(r), ::testing::ElementsAre("secrets/github_token $.env.GH ghp_****W3oV"));
  EXPECT_EQ(r.masked_inputs, R"({"env":{"GH":"ghp_****W3oV"}})");
}

TEST(InspectionTest, SecretUnderLogIsAllowedAndReported) {
  PolicyOptions o;
  o.inspect = {{"secrets", leash::v1::INSPECT_ACTION_LOG}};
  const ToolCheckResult r =
      Checker().CheckJson(Policy(o), "shell", absl::StrCat(R"({"t":")", kGhp, R"("})"));
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_EQ(r.decision.reason,
            "tools: shell matches allow entry 'shell'; inspection logged 1 finding: secrets "
            "(github_token at $.t)");
  EXPECT_THAT(Findings(r), ::testing::ElementsAre("secrets/github_token $.t ghp_****W3oV"));
}

TEST(InspectionTest, SecretUnderAllowIsNotReportedButStillMasked) {
  PolicyOptions o;
  o.inspect = {{"secrets", leash::v1::INSPECT_ACTION_ALLOW}};
  const ToolCheckResult r =
      Checker().CheckJson(Policy(o), "shell", absl::StrCat(R"({"t":")", kGhp, R"("})"));
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_THAT(r.findings, IsEmpty());
  EXPECT_EQ(r.masked_inputs, R"({"t":"ghp_****W3oV"})");
}

TEST(InspectionTest, PiiIsLoggedByDefault) {
  const ToolCheckResult r =
      Checker().CheckJson(Policy({}), "shell", R"({"to":"alice@corp.io"})");
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("inspection logged 1 finding: pii (email at $.to)"));
  EXPECT_EQ(r.masked_inputs, R"({"to":"al****io"})");
}

TEST(InspectionTest, PiiUnderBlockBlocks) {
  PolicyOptions o;
  o.inspect = {{"pii", leash::v1::INSPECT_ACTION_BLOCK}};
  const ToolCheckResult r = Checker().CheckJson(Policy(o), "shell", R"({"to":"alice@corp.io"})");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("pii (email at $.to; tools.inspect.pii is block)"));
}

TEST(InspectionTest, PrivEscBlocksByDefaultAndShowsTheCommand) {
  const ToolCheckResult r = Checker().CheckJson(Policy({}), "shell", R"({"cmd":"sudo rm -rf /"})");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason,
              HasSubstr("priv_esc (sudo at $.cmd, rm_rf_root at $.cmd; tools.inspect.priv_esc is "
                        "block)"));
  EXPECT_THAT(Findings(r), ::testing::ElementsAre("priv_esc/sudo $.cmd sudo",
                                                  "priv_esc/rm_rf_root $.cmd rm -rf /"));
}

TEST(InspectionTest, PrivEscUnderAllowPasses) {
  PolicyOptions o;
  o.inspect = {{"priv_esc", leash::v1::INSPECT_ACTION_ALLOW}};
  const ToolCheckResult r = Checker().CheckJson(Policy(o), "shell", R"({"cmd":"sudo ls"})");
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_THAT(r.findings, IsEmpty());
}

TEST(InspectionTest, BlockReasonAlsoNamesLoggedCategories) {
  const ToolCheckResult r = Checker().CheckJson(
      Policy({}), "shell", R"({"cmd":"doas sh","to":"alice@corp.io"})");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("; also logged: pii (email at $.to)"));
  EXPECT_EQ(r.findings.size(), 2u);
}

TEST(InspectionTest, UnspecifiedActionIsReadAsBlock) {
  PolicyOptions o;
  o.inspect = {{"pii", leash::v1::INSPECT_ACTION_UNSPECIFIED}};
  EXPECT_FALSE(
      Checker().CheckJson(Policy(o), "shell", R"({"to":"alice@corp.io"})").decision.allowed());
}

TEST(InspectionTest, FindingsAreCappedButCounted) {
  std::string json = "[";
  for (int i = 0; i < 150; ++i) absl::StrAppend(&json, i ? "," : "", "\"u", i, "@corp.io\"");
  json += "]";
  const ToolCheckResult r = Checker().CheckJson(Policy({}), "shell", json);
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_EQ(r.findings.size(), kMaxReportedFindings);
  EXPECT_EQ(r.total_findings, 150u);
  EXPECT_THAT(r.decision.reason, HasSubstr("inspection logged 150 findings"));
  EXPECT_THAT(r.decision.reason, HasSubstr("and 147 more"));
}

TEST(InspectionTest, ValueAndJsonFormsAgree) {
  const std::string json = absl::StrCat(R"({"a":[")", kGhp, R"(", "x"]})");
  google::protobuf::Value value;
  value.mutable_struct_value()->mutable_fields()->insert({"a", google::protobuf::Value()});
  auto* list = (*value.mutable_struct_value()->mutable_fields())["a"].mutable_list_value();
  list->add_values()->set_string_value(kGhp);
  list->add_values()->set_string_value("x");
  const ToolCheckResult from_json = Checker().CheckJson(Policy({}), "shell", json);
  const ToolCheckResult from_value = Checker().CheckValue(Policy({}), "shell", value);
  EXPECT_EQ(from_json.decision.reason, from_value.decision.reason);
  EXPECT_EQ(from_json.masked_inputs, from_value.masked_inputs);
  EXPECT_EQ(Findings(from_json), Findings(from_value));
}

TEST(InspectionTest, NoInputsAreNull) {
  const ToolCheckResult r = Checker().Check(Policy({}), "shell", InputsFormat::kNone, "");
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_EQ(r.masked_inputs, "null");
}

// --- the size bound ---

TEST(SizeTest, OverTheBoundBlocksUnderFailModeClosed) {
  PolicyOptions o;
  o.max_input_bytes = 16;
  const ToolCheckResult r = Checker().CheckJson(Policy(o), "shell", R"({"cmd":"echo hello"})");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_EQ(r.decision.reason,
            "tools: shell inputs are 20 bytes, over tools.max_input_bytes (16), so they were not "
            "inspected; raise tools.max_input_bytes or send smaller inputs; blocked because "
            "fail_mode is closed");
  EXPECT_THAT(r.masked_inputs, IsEmpty());
}

TEST(SizeTest, OverTheBoundAllowsWithAReasonUnderFailModeOpen) {
  PolicyOptions o;
  o.max_input_bytes = 16;
  o.fail_mode = "open";
  const ToolCheckResult r = Checker().CheckJson(Policy(o), "shell", R"({"cmd":"echo hello"})");
  EXPECT_TRUE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("over tools.max_input_bytes (16)"));
  EXPECT_THAT(r.decision.reason, HasSubstr("allowed because fail_mode is open"));
}

TEST(SizeTest, ExactlyTheBoundIsInspected) {
  PolicyOptions o;
  o.max_input_bytes = 20;
  EXPECT_TRUE(Checker().CheckJson(Policy(o), "shell", R"({"cmd":"echo hello"})").decision.allowed());
}

TEST(SizeTest, DefaultBoundIsOneMebibyte) {
  const std::string big = absl::StrCat("\"", std::string((1 << 20) - 2, 'a'), "\"");
  EXPECT_TRUE(Checker().CheckJson(Policy({}), "shell", big).decision.allowed());
  const ToolCheckResult r = Checker().CheckJson(Policy({}), "shell", big + " ");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("over tools.max_input_bytes (1048576)"));
}

// --- bad inputs ---

TEST(BadInputsTest, DeepNestingIsRefusedEvenUnderFailModeOpen) {
  PolicyOptions o;
  o.fail_mode = "open";
  const ToolCheckResult r =
      Checker().CheckJson(Policy(o), "shell", std::string(1000, '[') + std::string(1000, ']'));
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason,
              HasSubstr("tools: shell refused: inputs nest deeper than 32 levels"));
}

TEST(BadInputsTest, MalformedJsonIsRefused) {
  const ToolCheckResult r = Checker().CheckJson(Policy({}), "shell", R"({"cmd": )");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("tools: shell refused: inputs_json is not valid JSON"));
}

TEST(BadInputsTest, MalformedValueIsRefused) {
  const ToolCheckResult r =
      Checker().Check(Policy({}), "shell", InputsFormat::kSerializedValue, "\x1a\x05\xff\xff");
  EXPECT_FALSE(r.decision.allowed());
  EXPECT_THAT(r.decision.reason, HasSubstr("not a valid google.protobuf.Value"));
}

// --- the raw secret never leaves ---

TEST(NoLeakTest, RawSecretAppearsNowhereInTheResult) {
  const std::string pem = absl::StrCat("-----BEGIN PRIVATE KEY-----\\n",
                                       "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n",
                                       "-----END PRIVATE KEY-----");
  for (const PolicyOptions& o : {PolicyOptions{}, PolicyOptions{.inspect = {
                                     {"secrets", leash::v1::INSPECT_ACTION_ALLOW}}}}) {
    const ToolCheckResult r = Checker().CheckJson(
        Policy(o), "shell",
        absl::StrCat(R"({")", kGhp, R"(":{"pem":")", pem, R"(","cmd":"rm -rf --key=)", kGhp,
                     R"( /"}})"));
    std::string everything = r.decision.reason + r.masked_inputs;
    for (const auto& f : r.findings) everything += f.json_path() + f.masked();
    EXPECT_THAT(everything, Not(HasSubstr(kGhp.substr(4, 20))));
    EXPECT_THAT(everything, Not(HasSubstr("MIIEvQIBADANBgkqhkiG9w0")));
  }
}

}  // namespace
}  // namespace leash::tools
