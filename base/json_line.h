// The --json form of Leash's commands: a message, or a flat object, as one line of JSON. Shared
// by the CLI and by leashd's host commands (`leashd --init`, `leashd --teardown`), which the CLI
// runs in its own place, so both print the same line for the same result.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace leash::base {

// A message as one line of JSON (the --json form of every command): the proto field names in
// the proto's order, fields at their default printed too, enum values as the YAML spells them
// ("whitelist", not "MODE_WHITELIST") and 64-bit integers as numbers, not quoted strings.
std::string ToJson(const google::protobuf::Message& message);

// Appends `text` as a quoted JSON string.
void AppendJsonString(absl::string_view text, std::string* out);

// A flat JSON object for the local commands that have no response message (init, teardown,
// restart): string, number and boolean fields, in the order given.
struct JsonField {
  std::string name;
  std::string text;        // used when is_number is false
  double number = 0;
  bool is_number = false;
  bool is_bool = false;
  bool boolean = false;
};
std::string JsonObject(const std::vector<JsonField>& fields);

}  // namespace leash::base
