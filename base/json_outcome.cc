#include "base/json_outcome.h"

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/json_line.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace leash::base {
namespace {

// The inside of `text` when it is exactly one JSON object ("" for {}), else nullopt.
std::optional<std::string> ObjectBody(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::StartsWith(text, "{") || !absl::EndsWith(text, "}")) return std::nullopt;
  google::protobuf::Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(std::string(text), &parsed).ok()) {
    return std::nullopt;
  }
  return std::string(absl::StripAsciiWhitespace(text.substr(1, text.size() - 2)));
}

std::vector<std::string> Lines(absl::string_view err) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(err, '\n', absl::SkipWhitespace())) {
    line = absl::StripTrailingAsciiWhitespace(line);
    absl::ConsumePrefix(&line, "leash: ");
    lines.emplace_back(line);
  }
  return lines;
}

}  // namespace

std::string JsonOutcome(absl::string_view out, absl::string_view err, int exit_code) {
  std::string json = absl::StrCat("{\"ok\":", exit_code == 0 ? "true" : "false",
                                  ",\"exit_code\":", exit_code);
  const std::vector<std::string> lines = Lines(err);
  if (exit_code != 0 && !lines.empty()) {
    json.append(",\"error\":");
    AppendJsonString(absl::StrJoin(lines, "\n"), &json);
  } else if (!lines.empty()) {
    json.append(",\"notes\":[");
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) json.push_back(',');
      AppendJsonString(lines[i], &json);
    }
    json.push_back(']');
  }
  if (std::optional<std::string> body = ObjectBody(out)) {
    if (!body->empty()) absl::StrAppend(&json, ",", *body);
  } else if (!absl::StripAsciiWhitespace(out).empty()) {
    json.append(",\"output\":");
    AppendJsonString(out, &json);
  }
  json.push_back('}');
  return json;
}

bool WantsJson(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--json") return true;
  }
  return false;
}

}  // namespace leash::base
