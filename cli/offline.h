// The commands that work without leashd: they read the config file and ask the engine
// directly, and say that they did.
#pragma once

#include <ostream>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "base/exit_codes.h"
#include "leash/v1/policy.pb.h"

namespace leash::cli {

// Exit codes (`leash --help` documents them): the scheme of every Leash program,
// base/exit_codes.h (kExitOk, kExitRefused, kExitUsage, kExitUnreachable).

// Reads and parses the floor config file. The error names the file and how to fix it.
absl::StatusOr<leash::v1::Config> LoadConfigFile(const std::string& path);

// `leash validate` against the file.
int ValidateOffline(const Args& args, std::ostream& out, std::ostream& err);

// `leash check <surface> <subject>` against the file, for the configured user.
int CheckOffline(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace leash::cli
