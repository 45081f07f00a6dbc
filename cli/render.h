// How the CLI shows results to an operator: one line per fact, the verdict first, and where a
// result came from (leashd, or the file read offline).
#pragma once

#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include "leash/v1/control.pb.h"

namespace leash::cli {

// A message as one line of JSON with the proto field names (the --json form of every command).
std::string ToJson(const google::protobuf::Message& message);

// A flat JSON object for the local commands that have no response message (init, teardown,
// restart): string and number fields, in the order given.
struct JsonField {
  std::string name;
  std::string text;        // used when is_number is false
  double number = 0;
  bool is_number = false;
  bool is_bool = false;
  bool boolean = false;
};
std::string JsonObject(const std::vector<JsonField>& fields);

std::string RenderValidate(const leash::v1::ValidateResponse& response,
                           const std::string& config_path);
std::string RenderCheck(const leash::v1::CheckResponse& response, const std::string& config_path);
// `leash status`: the user, each surface's mode and list sizes, enforcer toggles, the
// decision-log sink; with leashd, every subject and both sidecars too.
std::string RenderStatus(const leash::v1::StatusResponse& response);
// `leash bindings`: one "<scope> -> <profile>" line each, with its acks.
std::string RenderBindings(const leash::v1::ListBindingsResponse& response);
// What a reconcile changed, one line per subject, then its warnings.
std::string RenderReconcile(const leash::v1::ReconcileReport& report);
// What a pass could not put in force, one "  - <sentence>" line each ("" when nothing).
std::string RenderNotInForce(const leash::v1::ReconcileReport& report);

}  // namespace leash::cli
