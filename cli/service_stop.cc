#include "cli/service_stop.h"

#include "absl/strings/str_cat.h"

namespace leash::cli {
namespace {

std::string Shown(const std::optional<std::string>& value) {
  return value ? absl::StrCat("'", *value, "'") : std::string("unset");
}

}  // namespace

ServiceStop JudgeServiceStop(const std::optional<std::string>& service_result,
                             const std::optional<std::string>& exit_code,
                             const std::optional<std::string>& exit_status) {
  const std::string seen = absl::StrCat("SERVICE_RESULT=", Shown(service_result), ", EXIT_CODE=",
                                        Shown(exit_code), ", EXIT_STATUS=", Shown(exit_status));
  ServiceStop stop;
  if (service_result == "success") {
    const bool exited_zero = exit_code == "exited" && exit_status == "0";
    const bool stop_signal =
        exit_code == "killed" && (exit_status == "TERM" || exit_status == "INT");
    if (exited_zero || stop_signal) {
      stop.release = true;
      stop.why = absl::StrCat("leash.service was stopped (", seen, ")");
      return stop;
    }
  }
  if (service_result == "timeout") {
    // A stop that outlived TimeoutStopSec and a start that never told systemd it was ready
    // (Type=notify, TimeoutStartSec) both end as "timeout", and nothing else systemd passes
    // tells them apart: kept, as every failure is.
    stop.why = absl::StrCat(
        "leash.service timed out (", seen, "), starting or stopping, which systemd does not "
        "say: every chain is left in place, so the agents' network stays closed until leashd "
        "runs again. `systemctl start leash` takes the chains over; after a stop you meant, "
        "`leash teardown` releases them by hand");
    return stop;
  }
  stop.why = absl::StrCat(
      service_result ? "leashd ended for failure" : "systemd did not say how leashd ended",
      " (", seen, "): every chain is left in place, so the agents' network stays closed until "
      "leashd runs again. `systemctl start leash` takes the chains over (after `systemctl "
      "reset-failed leash` when systemd gave up); `leash teardown` releases them by hand");
  return stop;
}

}  // namespace leash::cli
