// The inputs walk: JSON paths, keys and values, argv lines, masking in paths and in the
// rendered inputs, the nesting limit on JSON text and on serialized Values.
#include "tools_api/inputs.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tools_api/testing/fixtures.h"
#include "gtest/gtest.h"

namespace leash::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const Inspector& TheInspector() {
  static const Inspector* const inspector = Inspector::Create().value().release();
  return *inspector;
}

const std::string kGhp = absl::StrCat("ghp_", "R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV");

InputsReport InspectJson(const std::string& json) {
  absl::StatusOr<google::protobuf::Value> value = ParseInputsJson(json);
  EXPECT_TRUE(value.ok()) << value.status();
  absl::StatusOr<InputsReport> report = InspectInputs(TheInspector(), *value);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : InputsReport{};
}

std::string Describe(const InputsFinding& f) {
  return absl::StrCat(TheInspector().info(f.detector).name, " ", f.json_path, " ", f.shown,
                      f.in_key ? " (key)" : "");
}

std::vector<std::string> Described(const InputsReport& report) {
  std::vector<std::string> out;
  for (const InputsFinding& f : report.findings) out.push_back(Describe(f));
  return out;
}

std::string NestedListBytes(int depth) { return testing::NestedListValueBytes(depth); }

std::string NestedJson(int depth, const std::string& open, const std::string& close) {
  std::string json;
  for (int i = 0; i < depth; ++i) json += open;
  json += "1";
  for (int i = 0; i < depth; ++i) json += close;
  return json;
}

TEST(InspectInputsTest, ValueFindingHasItsPathAndIsMasked) {
  const InputsReport report = InspectJson(absl::StrCat(R"({"env":{"TOKEN":")", kGhp, R"("}})"));
  EXPECT_THAT(Described(report), ::testing::ElementsAre("github_token $.env.TOKEN ghp_****W3oV"));
  EXPECT_EQ(report.masked_json, R"({"env":{"TOKEN":"ghp_****W3oV"}})");
}

TEST(InspectInputsTest, SecretInAKeyIsMaskedInThePathToo) {
  const InputsReport report =
      InspectJson(absl::StrCat(R"({"headers":{")", kGhp, R"(":{"to":"bob@corp.io"}}})"));
  EXPECT_THAT(Described(report),
              ::testing::ElementsAre(R"(github_token $.headers["ghp_****W3oV"] ghp_****W3oV (key))",
                                     R"(email $.headers["ghp_****W3oV"].to b****io)"));
  EXPECT_THAT(report.masked_json, Not(HasSubstr(kGhp)));
  EXPECT_THAT(report.masked_json, HasSubstr(R"("ghp_****W3oV":{"to":"b****io"})"));
}

TEST(InspectInputsTest, ArrayIndexesAndOddKeys) {
  const InputsReport report =
      InspectJson(R"({"odd key":[1,true,null,"mail carol@corp.io"],"b":"sudo ls"})");
  EXPECT_THAT(Described(report), ::testing::ElementsAre("sudo $.b sudo",
                                                        R"(email $["odd key"][3] ca****io)"));
}

TEST(InspectInputsTest, TopLevelString) {
  const InputsReport report = InspectJson(R"("pkexec bash")");
  EXPECT_THAT(Described(report), ::testing::ElementsAre("pkexec $ pkexec"));
}

TEST(InspectInputsTest, ArgvElementsAreInspectedAsOneCommandLine) {
  const InputsReport report = InspectJson(R"({"argv":["rm","-rf","/"]})");
  EXPECT_THAT(Described(report), ::testing::ElementsAre("rm_rf_root $.argv rm -rf /"));
}

TEST(InspectInputsTest, ArgvDoesNotRepeatAnElementsOwnFinding) {
  const InputsReport report = InspectJson(R"({"argv":["sudo","ls"]})");
  EXPECT_THAT(Described(report), ::testing::ElementsAre("sudo $.argv[0] sudo"));
}

TEST(InspectInputsTest, SecretInsideACommandPhraseIsMasked) {
  const InputsReport report =
      InspectJson(absl::StrCat(R"({"cmd":"rm -rf --token=)", kGhp, R"( /"})"));
  EXPECT_THAT(Described(report),
              ::testing::ElementsAre("rm_rf_root $.cmd rm -rf --token=ghp_****W3oV /",
                                     "github_token $.cmd ghp_****W3oV"));
}

TEST(InspectInputsTest, SecretNamedMemberIsAGenericSecret) {
  const InputsReport report =
      InspectJson(R"({"db":{"password":"Zr5Xy7Wb1Nc4Vd6L","user":"app"},"max_tokens":"4096"})");
  EXPECT_THAT(Described(report),
              ::testing::ElementsAre("generic_secret $.db.password Zr****d6L"));
  EXPECT_EQ(report.masked_json, R"({"db":{"password":"Zr****d6L","user":"app"},"max_tokens":"4096"})");
}

TEST(InspectInputsTest, PlaceholderPasswordIsNotASecret) {
  EXPECT_THAT(InspectJson(R"({"password":"REDACTED","api_key":"<your key>"})").findings,
              ::testing::IsEmpty());
}

TEST(InspectInputsTest, RendersEveryJsonType) {
  const InputsReport report =
      InspectJson(R"({"b":[true,false,null],"n":[1,-2.5,1e300],"s":"q\"\\\n\u0001","a":{}})");
  EXPECT_EQ(report.masked_json,
            R"({"a":{},"b":[true,false,null],"n":[1,-2.5,1.0000000000000001e+300],"s":"q\"\\\n\u0001"})");
}

TEST(InspectInputsTest, LongRenderingIsTruncatedOnACharacterBoundary) {
  std::string json = R"({"text":")";
  for (int i = 0; i < 40000; ++i) json += "\xc3\xa9";
  json += R"("})";
  const InputsReport report = InspectJson(json);
  EXPECT_LE(report.masked_json.size(), kMaxMaskedInputsBytes + 20);
  EXPECT_THAT(report.masked_json, ::testing::EndsWith("...(truncated)"));
}

TEST(NestingTest, JsonAtTheLimitIsInspected) {
  EXPECT_TRUE(InspectInputs(TheInspector(), *ParseInputsJson(NestedJson(kMaxInputDepth, "[", "]")))
                  .ok());
  EXPECT_TRUE(
      InspectInputs(TheInspector(), *ParseInputsJson(NestedJson(kMaxInputDepth, R"({"a":)", "}")))
          .ok());
}

TEST(NestingTest, ValueOverTheLimitIsRefusedWithThePath) {
  google::protobuf::Value value;
  google::protobuf::Value* at = &value;
  for (int i = 0; i <= kMaxInputDepth; ++i) {
    at = &(*at->mutable_struct_value()->mutable_fields())["a"];
  }
  at->set_string_value("deep");
  absl::StatusOr<InputsReport> report = InspectInputs(TheInspector(), value);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(), HasSubstr("deeper than 32 levels"));
  EXPECT_THAT(report.status().message(), HasSubstr("(at $.a.a.a."));
}

TEST(NestingTest, DeepJsonTextIsRefusedBeforeParsing) {
  for (int depth : {kMaxInputDepth + 1, 200, 1 << 20}) {
    for (const char* open : {"[", R"({"a":)"}) {
      absl::StatusOr<google::protobuf::Value> value =
          ParseInputsJson(NestedJson(depth, open, open[0] == '[' ? "]" : "}"));
      EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument) << depth;
      EXPECT_THAT(value.status().message(), HasSubstr("deeper than 32 levels")) << depth;
    }
  }
  // Brackets inside strings do not nest.
  EXPECT_EQ(JsonTextDepth(R"(["[[[[", "\"{{{{"])"), 1);
  EXPECT_EQ(JsonTextDepth(std::string(1 << 20, '[')), kMaxInputDepth + 1);
}

TEST(NestingTest, MalformedJsonIsSaidToBeMalformed) {
  absl::StatusOr<google::protobuf::Value> value = ParseInputsJson(R"({"a": )");
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(value.status().message(), HasSubstr("inputs_json is not valid JSON"));
}

TEST(NestingTest, SerializedValueDepthIsMeasuredWithoutRecursion) {
  EXPECT_EQ(*SerializedValueDepth(NestedListBytes(3)), 3);
  EXPECT_EQ(*SerializedValueDepth(""), 0);
  // Stops counting once past the limit, however deep the bytes go.
  EXPECT_EQ(*SerializedValueDepth(NestedListBytes(300000)), kMaxInputDepth + 1);
  EXPECT_EQ(SerializedValueDepth("\xff\xff").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NestingTest, SerializedValueOverTheLimitIsRefused) {
  absl::StatusOr<google::protobuf::Value> shallow = ParseInputsValue(NestedListBytes(10));
  ASSERT_TRUE(shallow.ok()) << shallow.status();
  EXPECT_TRUE(InspectInputs(TheInspector(), *shallow).ok());

  // Within protobuf's budget but over Leash's limit: parsed, then refused by the walk, which
  // names where.
  absl::StatusOr<google::protobuf::Value> over = ParseInputsValue(NestedListBytes(kMaxInputDepth + 1));
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_THAT(InspectInputs(TheInspector(), *over).status().message(),
              HasSubstr("deeper than 32 levels of arrays and objects (at $[0][0][0]"));

  for (int depth : {1000, 300000}) {
    absl::StatusOr<google::protobuf::Value> deep = ParseInputsValue(NestedListBytes(depth));
    EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument) << depth;
    EXPECT_THAT(deep.status().message(), HasSubstr("deeper than 32 levels")) << depth;
  }
}

TEST(NestingTest, MalformedValueIsSaidToBeMalformed) {
  absl::StatusOr<google::protobuf::Value> value = ParseInputsValue("\x32\x05\x0a");
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(value.status().message(), HasSubstr("not a valid google.protobuf.Value"));
}

}  // namespace
}  // namespace leash::tools
