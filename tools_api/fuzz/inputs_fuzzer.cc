// Fuzz target for the tool-input path: the bytes as inputs_json text and as a serialized
// google.protobuf.Value through the whole ToolChecker (parse, depth limits, walk, detectors,
// masking, rendering), the non-recursive depth scanners, and a differential check that the
// one-pass batch inspection finds exactly what inspecting each text alone finds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/compiled_policy.h"
#include "engine/detectors.h"
#include "tools_api/inputs.h"
#include "tools_api/tool_checker.h"

namespace {

const leash::tools::ToolChecker& Checker() {
  static const auto* const checker =
      new leash::tools::ToolChecker(leash::tools::ToolChecker::Create().value());
  return *checker;
}

// Every category logged (not blocked), so inspection reports everything it finds.
const leash::engine::CompiledPolicy& Policy() {
  static const auto* const policy = [] {
    leash::v1::Config config;
    config.mutable_tools()->mutable_allow()->add_entries("t");
    for (const char* c : {"secrets", "pii", "priv_esc"}) {
      (*config.mutable_tools()->mutable_inspect())[c] = leash::v1::INSPECT_ACTION_LOG;
    }
    return new leash::engine::CompiledPolicy(leash::engine::CompiledPolicy::Compile(config));
  }();
  return *policy;
}

void Require(bool condition) {
  if (!condition) abort();
}

void CheckResult(const leash::tools::ToolCheckResult& r) {
  Require(!r.decision.reason.empty());
  Require(r.findings.size() <= leash::tools::kMaxReportedFindings);
  Require(r.findings.size() <= r.total_findings);
  Require(r.masked_inputs.size() <= leash::tools::kMaxMaskedInputsBytes + 32);
  for (const auto& f : r.findings) Require(!f.json_path().empty() && f.json_path()[0] == '$');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckResult(Checker().CheckJson(Policy(), "t", bytes));
  CheckResult(Checker().Check(Policy(), "t", leash::tools::InputsFormat::kSerializedValue, bytes));
  Require(leash::tools::JsonTextDepth(bytes) >= 0);
  (void)leash::tools::SerializedValueDepth(bytes);

  // Batch == one at a time, with the input split into texts at '|' (keeps neighbours varied).
  std::vector<absl::string_view> texts;
  for (size_t start = 0; start <= bytes.size();) {
    size_t bar = bytes.find('|', start);
    if (bar == absl::string_view::npos) bar = bytes.size();
    texts.push_back(bytes.substr(start, bar - start));
    start = bar + 1;
  }
  const leash::tools::Inspector& inspector = Checker().inspector();
  const std::vector<leash::tools::BatchMatch> batch = inspector.InspectBatch(texts);
  size_t k = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    for (const leash::tools::DetectorMatch& m : inspector.Inspect(texts[i])) {
      Require(k < batch.size() && batch[k].text == i && batch[k].match.detector == m.detector &&
              batch[k].match.begin == m.begin && batch[k].match.end == m.end);
      ++k;
    }
  }
  Require(k == batch.size());
  return 0;
}
