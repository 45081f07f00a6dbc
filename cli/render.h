// How the CLI shows results to an operator: one line per fact, the verdict first, and where a
// result came from (leashd, or the file read offline).
#pragma once

#include <string>
#include <vector>

#include "base/json_line.h"
#include "leash/v1/control.pb.h"

namespace leash::cli {

// The --json lines (base/json_line.h).
using base::JsonField;
using base::JsonObject;
using base::ToJson;

std::string RenderValidate(const leash::v1::ValidateResponse& response,
                           const std::string& config_path);
std::string RenderCheck(const leash::v1::CheckResponse& response, const std::string& config_path);
// `leash status`: the user, each surface's mode and list sizes, enforcer toggles, the
// decision-log sink; with leashd, every subject and both sidecars too.
std::string RenderStatus(const leash::v1::StatusResponse& response);
// `leash bindings`: one "<scope> -> <profile>" line each, with its acks; a binding that holds
// its subjects fail-closed is marked DANGLING (its profile does not exist) or DOES NOT LOAD,
// with why and the command that ends it on the next line.
std::string RenderBindings(const leash::v1::ListBindingsResponse& response);
// `leash <surface> list`: per surface its floor mode, then one line per entry: the list, the
// entry, the tier that writes it and its file (and, for a profile, the scopes bound to it).
std::string RenderEntries(const leash::v1::ListEntriesResponse& response);
// What a reconcile changed, one line per subject, then its warnings.
std::string RenderReconcile(const leash::v1::ReconcileReport& report);
// What a pass could not put in force, one "  - <sentence>" line each ("" when nothing).
std::string RenderNotInForce(const leash::v1::ReconcileReport& report);

}  // namespace leash::cli
