// The tools surface's decision, check_tool(name, inputs), against one subject's resolved
// policy (docs/ARCHITECTURE.md, rules T1 and T2): the registry first; if the tool name is
// allowed, the inputs are inspected, and the call is blocked when a category set to block is
// found. Sensitive matches are masked before they are logged.
//
// The order, and what each step answers:
//   1. the name: empty or longer than kMaxToolNameBytes is refused (block);
//   2. enforcers.tools: false: the surface is off, so every call is allowed, and says so;
//   3. the registry (tools.mode/allow/deny via CompiledPolicy::DecideTool): a refused name is
//      a block, its inputs neither read nor written anywhere;
//   4. size: inputs over tools.max_input_bytes are not inspected: a block under fail_mode
//      closed, an allow under open, with a reason either way — never a silent pass;
//   5. parsing: inputs that are not JSON / not a Value, or nest deeper than kMaxInputDepth,
//      are refused (block, whatever the fail_mode: they are a bad request, not a failure to
//      decide);
//   6. inspection: every finding of a category whose tools.inspect action is block blocks;
//      `log` findings are reported and logged but allow; `allow` categories are not reported.
//      Every secret and personal datum is masked in the result whatever its category's action,
//      so the raw value is never written anywhere.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/compiled_policy.h"
#include "engine/decision.h"
#include "google/protobuf/struct.pb.h"
#include "leash/v1/decision.pb.h"
#include "engine/detectors.h"

namespace leash::tools {

// Tool names are short identifiers; a longer "name" is refused rather than matched or logged.
inline constexpr size_t kMaxToolNameBytes = 256;
// The most findings a result carries; the reason still counts them all.
inline constexpr size_t kMaxReportedFindings = 100;

struct ToolCheckResult {
  engine::Decision decision;
  // Findings of categories whose action is block or log, at most kMaxReportedFindings, each
  // with category, detector, json_path and masked (see InputsFinding::shown).
  std::vector<leash::v1::ToolFinding> findings;
  // Every finding of a block or log category, including those past kMaxReportedFindings.
  size_t total_findings = 0;
  // The inputs as JSON with every secret and personal datum masked, for Subject.inputs.
  // Empty when the inputs were not read (a refused name, over the size bound, unparsable).
  std::string masked_inputs;
};

// How the inputs arrived.
enum class InputsFormat {
  kNone,            // no inputs: judged as JSON null
  kJson,            // JSON text (CheckToolRequest.inputs_json, the CLI's --inputs)
  kSerializedValue  // a serialized google.protobuf.Value (CheckToolRequest.inputs)
};

class ToolChecker {
 public:
  // Compiles the detectors. Internal only if a built-in pattern fails to compile.
  static absl::StatusOr<ToolChecker> Create();

  // Judges one call. `inputs` is in `format`; its size in bytes is what tools.max_input_bytes
  // bounds. The reason shows the name as MaskSensitive(name). Thread-safe (const, shared
  // compiled detectors).
  ToolCheckResult Check(const engine::CompiledPolicy& policy, absl::string_view name,
                        InputsFormat format, absl::string_view inputs) const;

  // The same for JSON text.
  ToolCheckResult CheckJson(const engine::CompiledPolicy& policy, absl::string_view name,
                            absl::string_view inputs_json) const {
    return Check(policy, name, InputsFormat::kJson, inputs_json);
  }

  // The same for a Value already in memory; its serialized size is what is bounded.
  ToolCheckResult CheckValue(const engine::CompiledPolicy& policy, absl::string_view name,
                             const google::protobuf::Value& inputs) const;

  const Inspector& inspector() const { return *inspector_; }

  // `text` with every secret or personal datum the detectors find in it masked (MaskSpans);
  // `text` itself when they find none. For the caller-chosen words a reason or a log line
  // repeats: the tool's name, the account a call names. Thread-safe.
  std::string MaskSensitive(absl::string_view text) const;

 private:
  explicit ToolChecker(std::shared_ptr<const Inspector> inspector)
      : inspector_(std::move(inspector)) {}
  ToolCheckResult Inspect(const engine::CompiledPolicy& policy, absl::string_view name,
                          engine::Decision registry, const google::protobuf::Value& inputs) const;

  std::shared_ptr<const Inspector> inspector_;
};

}  // namespace leash::tools
