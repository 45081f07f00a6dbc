// Whether leash.service's stop was deliberate, from what systemd passes to ExecStopPost
// ($SERVICE_RESULT, $EXIT_CODE, $EXIT_STATUS): `leash teardown --unless-failed` releases the
// chains after a deliberate stop only. An exit for failure (leashd gave up on a sidecar, a
// fatal error, a crash) leaves them in place, so the agents' network stays closed until a new
// leashd takes the chains over: "a failure never un-confines".
#pragma once

#include <optional>
#include <string>

namespace leash::cli {

struct ServiceStop {
  // Release every chain: the service was stopped on purpose.
  bool release = false;
  // Why, in a sentence for the journal.
  std::string why;
};

// Judges one stop. Deliberate: SERVICE_RESULT=success with leashd's own exit 0 (its SIGTERM stop
// path ran) or a death by SIGTERM/SIGINT (a stop before it could handle the signal). Every
// other result keeps the chains: exit-code, signal, core-dump, watchdog, oom-kill,
// start-limit-hit, resources, ...; timeout too, which this Type=notify unit gets both from a
// stop that outlived TimeoutStopSec and from a start that never became ready, with nothing
// to tell the two apart; any other exit; and a missing SERVICE_RESULT (not run by systemd,
// or a systemd too old to say).
ServiceStop JudgeServiceStop(const std::optional<std::string>& service_result,
                             const std::optional<std::string>& exit_code,
                             const std::optional<std::string>& exit_status);

}  // namespace leash::cli
