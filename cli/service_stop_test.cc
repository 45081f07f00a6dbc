// Every SERVICE_RESULT / EXIT_CODE / EXIT_STATUS systemd gives ExecStopPost, judged: only a
// deliberate stop releases the chains.
#include "cli/service_stop.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leash::cli {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::optional<std::string> service_result, exit_code, exit_status;
  bool release;
  const char* what;
};

TEST(JudgeServiceStop, ReleasesOnlyAfterADeliberateStop) {
  const std::optional<std::string> unset;
  const Case cases[] = {
      // Deliberate: `systemctl stop` (SIGTERM), leashd's stop path ran and exited 0.
      {"success", "exited", "0", true, "systemctl stop, clean exit"},
      // SIGTERM/SIGINT before leashd blocked them: systemd counts the death as clean.
      {"success", "killed", "TERM", true, "stopped while starting"},
      {"success", "killed", "INT", true, "interrupted"},
      // A timeout: a stop that outlived TimeoutStopSec and a start that never became ready
      // look the same to ExecStopPost, so the chains stay (fail closed).
      {"timeout", "killed", "KILL", false, "stop or start timed out, SIGKILLed"},
      {"timeout", "killed", "TERM", false, "start timed out, SIGTERMed"},
      {"timeout", "exited", "0", false, "start timed out, leashd's stop path ran"},
      // Failure: leashd gave up on a sidecar, or refused to start.
      {"exit-code", "exited", "1", false, "gave up on the watcher"},
      {"exit-code", "exited", "2", false, "bad flag"},
      // A crash.
      {"signal", "killed", "KILL", false, "SIGKILLed by someone"},
      {"signal", "killed", "SEGV", false, "crashed, no core"},
      {"core-dump", "dumped", "SEGV", false, "crashed"},
      {"core-dump", "dumped", "ABRT", false, "aborted"},
      {"watchdog", "killed", "ABRT", false, "watchdog"},
      {"oom-kill", "killed", "KILL", false, "out of memory"},
      {"resources", unset, unset, false, "could not be set up"},
      {"start-limit-hit", unset, unset, false, "systemd gave up restarting"},
      {"protocol", "exited", "0", false, "protocol"},
      // success with anything but a clean exit or a stop signal: a SIGHUP that beat leashd's
      // handler is not a stop, and neither is a SIGPIPE.
      {"success", "killed", "HUP", false, "SIGHUP before the handler"},
      {"success", "killed", "PIPE", false, "SIGPIPE"},
      {"success", "exited", "1", false, "success with a non-zero exit (SuccessExitStatus=)"},
      {"success", unset, unset, false, "success without an exit"},
      // Not run by systemd at all, or a systemd too old to say: cannot tell, so keep.
      {unset, unset, unset, false, "no systemd"},
      {unset, "exited", "0", false, "no SERVICE_RESULT"},
      {"", "", "", false, "empty values"},
      {"SUCCESS", "exited", "0", false, "not systemd's spelling"},
  };
  for (const Case& c : cases) {
    const ServiceStop stop = JudgeServiceStop(c.service_result, c.exit_code, c.exit_status);
    EXPECT_EQ(stop.release, c.release) << c.what << ": " << stop.why;
    EXPECT_THAT(stop.why, HasSubstr("SERVICE_RESULT=")) << c.what;
    if (!c.release) {
      EXPECT_THAT(stop.why, HasSubstr("every chain is left in place")) << c.what;
      EXPECT_THAT(stop.why, HasSubstr("leash teardown")) << c.what;
    }
  }
}

TEST(JudgeServiceStop, SaysWhatSystemdPassed) {
  EXPECT_THAT(JudgeServiceStop("exit-code", "exited", "1").why,
              HasSubstr("leashd ended for failure (SERVICE_RESULT='exit-code', "
                        "EXIT_CODE='exited', EXIT_STATUS='1')"));
  EXPECT_THAT(JudgeServiceStop(std::nullopt, std::nullopt, std::nullopt).why,
              HasSubstr("systemd did not say how leashd ended (SERVICE_RESULT=unset"));
}

}  // namespace
}  // namespace leash::cli
