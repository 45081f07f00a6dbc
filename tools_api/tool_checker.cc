#include "tools_api/tool_checker.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "tools_api/inputs.h"
#include "engine/mask.h"

namespace leash::tools {
namespace {

using engine::Decision;
using engine::Verdict;
using leash::v1::InspectAction;

Decision Block(std::string reason) {
  Decision d;
  d.verdict = Verdict::kBlock;
  d.reason = std::move(reason);
  return d;
}

Decision Allow(std::string reason) {
  Decision d;
  d.verdict = Verdict::kAllow;
  d.reason = std::move(reason);
  return d;
}

// A name as it may appear in a reason: bounded, since the caller chose it.
std::string Quoted(absl::string_view name) {
  return absl::StrCat("'", Utf8Prefix(name, 64), name.size() > 64 ? "...'" : "'");
}

// The configured action of `category`. Defaults fill every category (WithDefaults); an absent
// or unspecified one is read as block: an unreadable setting must not disable inspection.
InspectAction ActionOf(const engine::CompiledPolicy& policy, Category category) {
  const auto& inspect = policy.config().tools().inspect();
  auto it = inspect.find(std::string(CategoryName(category)));
  if (it == inspect.end() || it->second == leash::v1::INSPECT_ACTION_UNSPECIFIED) {
    return leash::v1::INSPECT_ACTION_BLOCK;
  }
  return it->second;
}

// "github_token at $.env.TOKEN, email at $.to and 3 more"
std::string Listing(const Inspector& inspector, const std::vector<const InputsFinding*>& list) {
  constexpr size_t kShown = 3;
  std::vector<std::string> parts;
  for (size_t i = 0; i < list.size() && i < kShown; ++i) {
    parts.push_back(absl::StrCat(inspector.info(list[i]->detector).name, " at ",
                                 list[i]->json_path));
  }
  std::string out = absl::StrJoin(parts, ", ");
  if (list.size() > kShown) absl::StrAppend(&out, " and ", list.size() - kShown, " more");
  return out;
}

}  // namespace

absl::StatusOr<ToolChecker> ToolChecker::Create() {
  absl::StatusOr<std::unique_ptr<const Inspector>> inspector = Inspector::Create();
  if (!inspector.ok()) return inspector.status();
  return ToolChecker(std::shared_ptr<const Inspector>(std::move(*inspector)));
}

std::string ToolChecker::MaskSensitive(absl::string_view text) const {
  return tools::MaskSensitive(*inspector_, text);
}

ToolCheckResult ToolChecker::Check(const engine::CompiledPolicy& policy, absl::string_view raw_name,
                                   InputsFormat format, absl::string_view inputs) const {
  ToolCheckResult result;
  // The name as every reason shows it: a name that holds a secret (an API key pasted as the
  // tool's name) is masked like one found in the inputs; only the registry sees it raw.
  const std::string shown_name = MaskSensitive(raw_name);
  const absl::string_view name = shown_name;
  if (raw_name.empty()) {
    result.decision = Block("tools: the call names no tool; CheckTool needs the tool's exact name");
    return result;
  }
  if (raw_name.size() > kMaxToolNameBytes) {
    result.decision = Block(absl::StrCat("tools: tool name ", Quoted(name), " is ", raw_name.size(),
                                         " bytes; tool names are at most ", kMaxToolNameBytes));
    return result;
  }
  if (!policy.config().enforcers().tools()) {
    result.decision = Allow(absl::StrCat("tools: ", name,
                                         " allowed: the tools enforcer is off (enforcers.tools: "
                                         "false), so tool calls are not judged"));
    return result;
  }
  // "first checks the registry; if the tool name is allowed, it inspects the inputs".
  Decision registry = policy.DecideTool(raw_name);
  if (shown_name != raw_name) {
    absl::StrReplaceAll({{raw_name, shown_name}}, &registry.reason);
  }
  if (!registry.allowed()) {
    const bool whitelist = policy.config().tools().mode() != leash::v1::MODE_BLACKLIST;
    absl::StrAppend(&registry.reason,
                    registry.reason.find("deny entry") != std::string::npos
                        ? "; remove it from tools.deny to permit it"
                        : (whitelist ? "; add it to tools.allow to permit it" : ""));
    result.decision = std::move(registry);
    return result;
  }
  const uint64_t max_bytes = policy.config().tools().max_input_bytes();
  if (inputs.size() > max_bytes) {
    result.decision = engine::FailDecision(
        policy.fail_mode(), leash::v1::SURFACE_TOOLS,
        absl::StrCat(name, " inputs are ", inputs.size(), " bytes, over tools.max_input_bytes (",
                     max_bytes, "), so they were not inspected; raise tools.max_input_bytes or "
                     "send smaller inputs"));
    return result;
  }
  google::protobuf::Arena arena;
  google::protobuf::Value* value = google::protobuf::Arena::CreateMessage<google::protobuf::Value>(&arena);
  if (format != InputsFormat::kNone) {
    absl::StatusOr<google::protobuf::Value*> parsed = format == InputsFormat::kJson
                                                          ? ParseInputsJson(inputs, &arena)
                                                          : ParseInputsValue(inputs, &arena);
    if (!parsed.ok()) {
      result.decision = Block(absl::StrCat("tools: ", name, " refused: ", parsed.status().message()));
      return result;
    }
    value = *parsed;
  } else {
    value->set_null_value(google::protobuf::NULL_VALUE);
  }
  return Inspect(policy, name, std::move(registry), *value);
}

ToolCheckResult ToolChecker::CheckValue(const engine::CompiledPolicy& policy,
                                        absl::string_view name,
                                        const google::protobuf::Value& inputs) const {
  // Registry, name and size exactly as Check does them, on the serialized size.
  const std::string bytes = inputs.SerializeAsString();
  return Check(policy, name, InputsFormat::kSerializedValue, bytes);
}

ToolCheckResult ToolChecker::Inspect(const engine::CompiledPolicy& policy, absl::string_view name,
                                     Decision registry,
                                     const google::protobuf::Value& inputs) const {
  ToolCheckResult result;
  absl::StatusOr<InputsReport> report = InspectInputs(*inspector_, inputs);
  if (!report.ok()) {
    result.decision = Block(absl::StrCat("tools: ", name, " refused: ", report.status().message()));
    return result;
  }
  result.masked_inputs = std::move(report->masked_json);

  InspectAction action[kNumCategories];
  std::vector<const InputsFinding*> by_category[kNumCategories];
  for (int c = 0; c < kNumCategories; ++c) action[c] = ActionOf(policy, static_cast<Category>(c));
  for (const InputsFinding& f : report->findings) {
    const int c = static_cast<int>(f.category);
    if (action[c] == leash::v1::INSPECT_ACTION_ALLOW) continue;
    by_category[c].push_back(&f);
    ++result.total_findings;
    if (result.findings.size() < kMaxReportedFindings) {
      leash::v1::ToolFinding& out = result.findings.emplace_back();
      out.set_category(std::string(CategoryName(f.category)));
      out.set_detector(std::string(inspector_->info(f.detector).name));
      out.set_json_path(f.json_path);
      out.set_masked(f.shown);
    }
  }

  std::vector<std::string> blocking, logged;
  for (int c = 0; c < kNumCategories; ++c) {
    if (by_category[c].empty()) continue;
    const absl::string_view category = CategoryName(static_cast<Category>(c));
    const std::string listing = Listing(*inspector_, by_category[c]);
    if (action[c] == leash::v1::INSPECT_ACTION_BLOCK) {
      blocking.push_back(absl::StrCat(category, " (", listing, "; tools.inspect.", category,
                                      " is block)"));
    } else {
      logged.push_back(absl::StrCat(category, " (", listing, ")"));
    }
  }
  if (!blocking.empty()) {
    result.decision = Block(absl::StrCat(
        "tools: ", name, " inputs blocked by inspection: ", absl::StrJoin(blocking, "; "),
        ". Remove the flagged values from the call, or set the category's tools.inspect action "
        "to log if such calls are expected",
        logged.empty() ? "" : absl::StrCat("; also logged: ", absl::StrJoin(logged, "; "))));
    return result;
  }
  result.decision = std::move(registry);
  if (logged.empty()) {
    absl::StrAppend(&result.decision.reason, "; inspection found nothing to flag");
  } else {
    absl::StrAppend(&result.decision.reason, "; inspection logged ", result.total_findings,
                    result.total_findings == 1 ? " finding: " : " findings: ",
                    absl::StrJoin(logged, "; "));
  }
  return result;
}

}  // namespace leash::tools
