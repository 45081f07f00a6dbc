#include "cli/render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/validate.h"
#include "google/protobuf/util/json_util.h"

namespace leash::cli {
namespace {

std::string Provenance(const std::string& evaluated_by, const std::string& config_path) {
  if (evaluated_by == "offline") {
    return absl::StrCat("(offline: judged ", config_path, " directly; leashd was not asked)\n");
  }
  return "";
}

}  // namespace

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

std::string RenderValidate(const leash::v1::ValidateResponse& response,
                           const std::string& config_path) {
  std::string out;
  if (response.findings().empty()) {
    absl::StrAppend(&out, config_path, ": valid, no findings\n");
  } else {
    absl::StrAppend(&out, config_path, ": ", response.findings_size(),
                    response.findings_size() == 1 ? " finding\n" : " findings\n");
  }
  int blocking = 0;
  for (const leash::v1::Finding& finding : response.findings()) {
    const bool blocks = finding.severity() == leash::v1::SEVERITY_ERROR ||
                        finding.severity() == leash::v1::SEVERITY_CRITICAL;
    blocking += blocks;
    absl::StrAppend(&out, absl::StrFormat("  %-8s %s%s: %s\n",
                                          engine::SeverityName(finding.severity()),
                                          finding.source() == "floor" || finding.source().empty()
                                              ? ""
                                              : finding.source() + " ",
                                          finding.field(), finding.message()));
  }
  if (blocking > 0) {
    absl::StrAppend(&out, "invalid: ", blocking, blocking == 1 ? " finding is" : " findings are",
                    " an error or critical\n");
  }
  absl::StrAppend(&out, Provenance(response.evaluated_by(), config_path));
  return out;
}

std::string RenderCheck(const leash::v1::CheckResponse& response,
                        const std::string& config_path) {
  const bool allowed = response.decision().action() == leash::v1::ACTION_ALLOW;
  return absl::StrCat(allowed ? "allow" : "block", "  ", response.decision().reason(),
                      response.account().empty() ? "" : absl::StrCat("  [", response.account(), "]"),
                      "\n", Provenance(response.evaluated_by(), config_path));
}

}  // namespace leash::cli
