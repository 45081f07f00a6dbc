// The commands that work without leashd: they read the config file and ask the engine
// directly, and say that they did.
#pragma once

#include <ostream>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "leash/v1/policy.pb.h"

namespace leash::cli {

// Exit codes, as `leash --help` documents them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;  // refused, blocked, or findings that fail validate
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;  // leashd is not answering

// Reads and parses the floor config file. The error names the file and how to fix it.
absl::StatusOr<leash::v1::Config> LoadConfigFile(const std::string& path);

// `leash validate` against the file.
int ValidateOffline(const Args& args, std::ostream& out, std::ostream& err);

// `leash check <surface> <subject>` against the file, for the configured user.
int CheckOffline(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace leash::cli
