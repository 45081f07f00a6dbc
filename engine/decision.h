// A decision as the engine makes it, and the surfaces it is made on.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/config_defaults.h"
#include "engine/ip_address.h"
#include "leash/v1/decision.pb.h"

namespace leash::engine {

using leash::v1::Surface;

enum class Verdict { kAllow, kBlock };

// What an allow was granted on. The proxy connects to an address it resolved itself when the
// decision was made on a domain, never to the one the agent supplied.
enum class MatchedOn { kNone, kDomain, kIp };

struct Decision {
  Verdict verdict = Verdict::kBlock;
  std::string reason;
  MatchedOn matched_on = MatchedOn::kNone;
  // False only for a block an audited surface logs and does not make (UnderAudit).
  bool enforced = true;
  // A block on an audited surface that audit did not lift: the policy written above the tier
  // that set audit blocks the same event (CompiledPolicy::UnderAudit, rule L4). Logged with
  // enforced: true written out, so the log tells it from a block on a surface not audited.
  bool kept_under_audit = false;

  bool allowed() const { return verdict == Verdict::kAllow; }
  // What the enforcer answers: the verdict, except that a block not enforced lets the event
  // through.
  bool permits() const { return allowed() || !enforced; }
  leash::v1::Decision ToProto() const;
};

// A network subject: the name read from the TLS SNI or HTTP Host (may be empty), the original
// destination address (may be absent, e.g. a dry run by name), and the port.
struct NetworkSubject {
  std::string domain;
  std::optional<IpAddress> ip;
  uint16_t port = 0;
};

// The answer when a decision cannot be reached: block under fail_mode closed, allow under
// open. `what_failed` says why, e.g. "policy unavailable".
Decision FailDecision(FailMode fail_mode, Surface surface, absl::string_view what_failed);

// Audit with nothing written above the tier that set it: on an audited surface a block stays a
// block in the log and is not made. Returns `decision` with enforced false when it is a block
// and `audited`; unchanged otherwise. Enforcers go through CompiledPolicy::UnderAudit, which
// also keeps what is written above that tier (rule L4).
Decision UnderAudit(Decision decision, bool audited);

// "network", "filesystem", "commands", "tools".
absl::string_view SurfaceName(Surface surface);

// Accepts the names above and the CLI's aliases net, fs, cmd, tool. InvalidArgument otherwise.
absl::StatusOr<Surface> ParseSurfaceName(absl::string_view name);

// "allow" / "block".
absl::string_view VerdictName(Verdict verdict);

}  // namespace leash::engine
