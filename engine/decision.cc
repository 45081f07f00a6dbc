#include "engine/decision.h"

#include "absl/strings/str_cat.h"

namespace leash::engine {

leash::v1::Decision Decision::ToProto() const {
  leash::v1::Decision proto;
  proto.set_action(allowed() ? leash::v1::ACTION_ALLOW : leash::v1::ACTION_BLOCK);
  proto.set_reason(reason);
  return proto;
}

Decision FailDecision(FailMode fail_mode, Surface surface, absl::string_view what_failed) {
  Decision decision;
  if (fail_mode == FailMode::kOpen) {
    decision.verdict = Verdict::kAllow;
    decision.reason = absl::StrCat(SurfaceName(surface), ": ", what_failed,
                                   "; allowed because fail_mode is open");
  } else {
    decision.verdict = Verdict::kBlock;
    decision.reason = absl::StrCat(SurfaceName(surface), ": ", what_failed,
                                   "; blocked because fail_mode is closed");
  }
  return decision;
}

Decision UnderAudit(Decision decision, bool audited) {
  if (audited && !decision.allowed()) decision.enforced = false;
  return decision;
}

absl::string_view SurfaceName(Surface surface) {
  switch (surface) {
    case leash::v1::SURFACE_NETWORK:
      return "network";
    case leash::v1::SURFACE_FILESYSTEM:
      return "filesystem";
    case leash::v1::SURFACE_COMMANDS:
      return "commands";
    case leash::v1::SURFACE_TOOLS:
      return "tools";
    default:
      return "unknown";
  }
}

absl::StatusOr<Surface> ParseSurfaceName(absl::string_view name) {
  if (name == "network" || name == "net") return leash::v1::SURFACE_NETWORK;
  if (name == "filesystem" || name == "fs") return leash::v1::SURFACE_FILESYSTEM;
  if (name == "commands" || name == "cmd") return leash::v1::SURFACE_COMMANDS;
  if (name == "tools" || name == "tool") return leash::v1::SURFACE_TOOLS;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown surface '", name, "'; use network|filesystem|commands|tools (or net|fs|cmd|tool)"));
}

absl::string_view VerdictName(Verdict verdict) {
  return verdict == Verdict::kAllow ? "allow" : "block";
}

}  // namespace leash::engine
