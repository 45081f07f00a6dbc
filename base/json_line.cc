#include "base/json_line.h"

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace leash::base {

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) {
    return "{}";
  }
  return json;
}

std::string JsonObject(const std::vector<JsonField>& fields) {
  google::protobuf::Struct object;
  for (const JsonField& field : fields) {
    google::protobuf::Value& value = (*object.mutable_fields())[field.name];
    if (field.is_bool) {
      value.set_bool_value(field.boolean);
    } else if (field.is_number) {
      value.set_number_value(field.number);
    } else {
      value.set_string_value(field.text);
    }
  }
  return ToJson(object);
}

}  // namespace leash::base
