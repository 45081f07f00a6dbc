// Running leashd in the CLI's place: `leash` with no command (the service), and the host
// commands only leashd may carry out because they touch its files, locks and nftables
// (`leash init` -> `leashd --init`, `leash teardown` -> `leashd --teardown`).
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"

namespace leash::cli {

// Replaces this process with leashd (found in $LEASH_LEASHD, next to leash, or
// /usr/lib/leash), given `flags`. Returns only when it could not: the exit code, with the
// reason on io.err.
int ExecLeashd(const std::vector<std::string>& flags, Io io);

}  // namespace leash::cli
