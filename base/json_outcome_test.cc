// --json is one JSON object on stdout for every outcome: what a command printed, wrapped with
// ok, exit_code and its error, whichever way it ended.
#include "base/json_outcome.h"

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::base {
namespace {

google::protobuf::Struct ParseObject(const std::string& json) {
  google::protobuf::Struct parsed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_EQ(json.find('\n'), std::string::npos) << json;
  return parsed;
}

TEST(JsonOutcome, SuccessKeepsTheCommandsObjectAfterOk) {
  const std::string json = JsonOutcome("{\"written\":true,\"notices\":[]}\n", "", 0);
  EXPECT_EQ(json, "{\"ok\":true,\"exit_code\":0,\"written\":true,\"notices\":[]}");
}

TEST(JsonOutcome, AnErrorOnStderrIsTheErrorField) {
  const std::string json =
      JsonOutcome("", "leash: leashd is not answering on /run/leash/leash.sock: is it running?\n",
                  3);
  google::protobuf::Struct parsed = ParseObject(json);
  EXPECT_FALSE(parsed.fields().at("ok").bool_value());
  EXPECT_EQ(parsed.fields().at("exit_code").number_value(), 3);
  EXPECT_EQ(parsed.fields().at("error").string_value(),
            "leashd is not answering on /run/leash/leash.sock: is it running?");
}

TEST(JsonOutcome, ARefusalCarriesItsErrorAndItsAcks) {
  const std::string json = JsonOutcome(
      "{\"written\":false,\"refusal\":{\"kind\":\"loosening\",\"loosenings\":[{\"ack\":\"network."
      "allow:x.com\"}]}}\n",
      "refused (loosening): binding loosens\n", 1);
  google::protobuf::Struct parsed = ParseObject(json);
  EXPECT_FALSE(parsed.fields().at("ok").bool_value());
  EXPECT_EQ(parsed.fields().at("error").string_value(), "refused (loosening): binding loosens");
  EXPECT_EQ(parsed.fields().at("refusal").struct_value().fields().at("kind").string_value(),
            "loosening");
}

TEST(JsonOutcome, TextThatIsNotJsonIsCarriedAsOutput) {
  const std::string json = JsonOutcome("usage: leash bindings\nmore\n", "", 2);
  google::protobuf::Struct parsed = ParseObject(json);
  EXPECT_EQ(parsed.fields().at("output").string_value(), "usage: leash bindings\nmore\n");
  // Two objects are not one object.
  parsed = ParseObject(JsonOutcome("{\"a\":1}\n{\"b\":2}\n", "", 0));
  EXPECT_TRUE(parsed.fields().contains("output"));
}

TEST(JsonOutcome, StderrOnSuccessIsNotes) {
  google::protobuf::Struct parsed =
      ParseObject(JsonOutcome("{}", "note: --config names a.yaml\nsecond\n", 0));
  EXPECT_TRUE(parsed.fields().at("ok").bool_value());
  ASSERT_EQ(parsed.fields().at("notes").list_value().values_size(), 2);
  EXPECT_EQ(parsed.fields().at("notes").list_value().values(0).string_value(),
            "note: --config names a.yaml");
}

TEST(JsonOutcome, WantsJsonStopsAtDoubleDash) {
  const char* with[] = {"leash", "status", "--json"};
  const char* after[] = {"leash", "check", "--", "--json"};
  EXPECT_TRUE(WantsJson(3, with));
  EXPECT_FALSE(WantsJson(4, after));
}

}  // namespace
}  // namespace leash::base
