#include "base/json_line.h"

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace leash::base {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendMessage(const Message& message, std::string* out);

// The well-known types have JSON forms of their own (a Struct is an object, a Timestamp a
// string); protobuf's printer knows them.
bool IsWellKnown(const Descriptor* descriptor) {
  return absl::StartsWith(descriptor->full_name(), "google.protobuf.");
}

// An enum value as the YAML spells it: the value's name without its type's prefix, in lower
// case (Mode MODE_WHITELIST is "whitelist", Action ACTION_BLOCK "block"). Every leash.v1 enum
// names its values <TYPE_IN_UPPER_SNAKE>_<VALUE>, which is what makes this one rule enough.
std::string EnumName(const google::protobuf::EnumDescriptor* type, int number) {
  const EnumValueDescriptor* value = type->FindValueByNumber(number);
  if (value == nullptr) return absl::StrCat(number);
  std::string prefix;
  for (char c : type->name()) {
    if (absl::ascii_isupper(c) && !prefix.empty()) prefix.push_back('_');
    prefix.push_back(absl::ascii_toupper(c));
  }
  prefix.push_back('_');
  absl::string_view name = value->name();
  if (absl::StartsWith(name, prefix)) name.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(name);
}

void AppendValue(const Message& message, const FieldDescriptor* field, int index,
                 std::string* out) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(out, repeated ? r.GetRepeatedInt32(message, field, index)
                                    : r.GetInt32(message, field));
      return;
    case FieldDescriptor::CPPTYPE_INT64:
      // Numbers stay numbers: protobuf's JSON quotes 64-bit integers, which a script then has
      // to convert back. Leash's counters and versions stay far below 2^53.
      absl::StrAppend(out, repeated ? r.GetRepeatedInt64(message, field, index)
                                    : r.GetInt64(message, field));
      return;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(out, repeated ? r.GetRepeatedUInt32(message, field, index)
                                    : r.GetUInt32(message, field));
      return;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(out, repeated ? r.GetRepeatedUInt64(message, field, index)
                                    : r.GetUInt64(message, field));
      return;
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      google::protobuf::Value number;
      number.set_number_value(
          field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE
              ? (repeated ? r.GetRepeatedDouble(message, field, index) : r.GetDouble(message, field))
              : (repeated ? r.GetRepeatedFloat(message, field, index) : r.GetFloat(message, field)));
      std::string text;
      (void)google::protobuf::util::MessageToJsonString(number, &text);
      out->append(text.empty() ? "0" : text);
      return;
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((repeated ? r.GetRepeatedBool(message, field, index) : r.GetBool(message, field))
                      ? "true"
                      : "false");
      return;
    case FieldDescriptor::CPPTYPE_ENUM:
      AppendJsonString(EnumName(field->enum_type(), repeated
                                                        ? r.GetRepeatedEnumValue(message, field, index)
                                                        : r.GetEnumValue(message, field)),
                       out);
      return;
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& text = repeated
                                    ? r.GetRepeatedStringReference(message, field, index, &scratch)
                                    : r.GetStringReference(message, field, &scratch);
      AppendJsonString(field->type() == FieldDescriptor::TYPE_BYTES ? absl::Base64Escape(text)
                                                                     : text,
                       out);
      return;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      AppendMessage(repeated ? r.GetRepeatedMessage(message, field, index)
                             : r.GetMessage(message, field),
                    out);
      return;
  }
}

// A map field: an object keyed by the entries' keys, in the order they are held.
void AppendMap(const Message& message, const FieldDescriptor* field, std::string* out) {
  const Reflection& r = *message.GetReflection();
  const FieldDescriptor* key = field->message_type()->map_key();
  const FieldDescriptor* value = field->message_type()->map_value();
  out->push_back('{');
  for (int i = 0; i < r.FieldSize(message, field); ++i) {
    const Message& entry = r.GetRepeatedMessage(message, field, i);
    if (i > 0) out->push_back(',');
    std::string key_text;
    if (key->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      key_text = entry.GetReflection()->GetString(entry, key);
    } else {
      AppendValue(entry, key, -1, &key_text);
    }
    AppendJsonString(key_text, out);
    out->push_back(':');
    AppendValue(entry, value, -1, out);
  }
  out->push_back('}');
}

void AppendMessage(const Message& message, std::string* out) {
  const Descriptor* descriptor = message.GetDescriptor();
  if (IsWellKnown(descriptor)) {
    std::string text;
    if (!google::protobuf::util::MessageToJsonString(message, &text).ok()) text = "null";
    out->append(text);
    return;
  }
  const Reflection& r = *message.GetReflection();
  out->push_back('{');
  bool first = true;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    // Fields at their default are printed too (so a script reading "written": false need not
    // treat a missing key as false); a field with presence is printed only when set, so an
    // unset optional stays distinct from one set to its default.
    if (!field->is_repeated() && field->has_presence() && !r.HasField(message, field)) continue;
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(field->name(), out);
    out->push_back(':');
    if (field->is_map()) {
      AppendMap(message, field, out);
    } else if (field->is_repeated()) {
      out->push_back('[');
      for (int j = 0; j < r.FieldSize(message, field); ++j) {
        if (j > 0) out->push_back(',');
        AppendValue(message, field, j, out);
      }
      out->push_back(']');
    } else {
      AppendValue(message, field, -1, out);
    }
  }
  out->push_back('}');
}

}  // namespace

void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
          out->append(escaped);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  AppendMessage(message, &json);
  return json;
}

std::string JsonObject(const std::vector<JsonField>& fields) {
  std::string json = "{";
  for (const JsonField& field : fields) {
    if (json.size() > 1) json.push_back(',');
    AppendJsonString(field.name, &json);
    json.push_back(':');
    if (field.is_bool) {
      json.append(field.boolean ? "true" : "false");
    } else if (field.is_number) {
      google::protobuf::Value number;
      number.set_number_value(field.number);
      std::string text;
      (void)google::protobuf::util::MessageToJsonString(number, &text);
      json.append(text.empty() ? "0" : text);
    } else {
      AppendJsonString(field.text, &json);
    }
  }
  json.push_back('}');
  return json;
}

}  // namespace leash::base
