#include "cli/config_target.h"

#include <limits.h>
#include <stdlib.h>

#include "cli/offline.h"

namespace leash::cli {
namespace {

// The path with symlinks and dots resolved, or as given when it cannot be (it may not exist).
std::string Canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

}  // namespace

std::optional<std::string> LeashdRunsOnAnotherConfig(const Args& args, Client& client) {
  if (!args.config_named) return std::nullopt;
  leash::v1::StatusResponse status;
  if (!client.control().GetStatus(client.Context().get(), {}, &status).ok()) return std::nullopt;
  if (status.config_path().empty() ||
      Canonical(status.config_path()) == Canonical(args.config_path)) {
    return std::nullopt;
  }
  return status.config_path();
}

std::optional<int> RefuseWriteToAnotherConfig(const Args& args, Client& client, Io io) {
  std::optional<std::string> leashd = LeashdRunsOnAnotherConfig(args, client);
  if (!leashd) return std::nullopt;
  io.err << "leash: --config names " << args.config_path << ", but leashd runs on " << *leashd
         << ", and this change would go through leashd to " << *leashd
         << "; nothing was written. To change the live policy, leave out --config (and "
            "LEASH_CONFIG); to change "
         << args.config_path << ", edit the file itself\n";
  return base::kExitUsage;
}

}  // namespace leash::cli
