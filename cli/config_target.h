// Which config file a command is about. "The config path comes from --config/-c or
// LEASH_CONFIG" — but leashd runs on one file, and every call that goes through leashd reads or
// edits that one. When the operator names another file:
//   - status, validate and check judge the named file directly (offline), saying so;
//   - a write through leashd (list and mode edits, bind, unbind, profile save/delete) is
//     refused, naming both files: it would change leashd's file, not the named one.
// With no file named, the command is about leashd's file, whatever its path.
#pragma once

#include <optional>
#include <string>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/commands.h"

namespace leash::cli {

// leashd's config path when --config/-c or LEASH_CONFIG names a different file (compared after
// resolving symlinks and dots); nullopt when none was named, they are the same file, or leashd
// does not answer.
std::optional<std::string> LeashdRunsOnAnotherConfig(const Args& args, Client& client);

// For a write through leashd: the exit code after saying why, when the named file is not
// leashd's; nullopt to go on.
std::optional<int> RefuseWriteToAnotherConfig(const Args& args, Client& client, Io io);

}  // namespace leash::cli
