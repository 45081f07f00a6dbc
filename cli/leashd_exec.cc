#include "cli/leashd_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/install_layout.h"
#include "cli/offline.h"

namespace leash::cli {

int ExecLeashd(const std::vector<std::string>& flags, Io io) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("LEASH_LEASHD")) candidates.push_back(env);
  candidates.push_back(base::FindLeashProgram("leashd", "controlplane/main", "cli"));
  for (const std::string& path : candidates) {
    if (access(path.c_str(), X_OK) != 0) continue;
    std::vector<std::string> argv = {path};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    // What this process printed so far comes before what leashd prints.
    io.out.flush();
    io.err.flush();
    execv(path.c_str(), raw.data());
    io.err << "leash: exec " << path << ": " << std::strerror(errno) << "\n";
    return base::kExitRefused;
  }
  io.err << "leash: cannot find leashd (looked in $LEASH_LEASHD, next to "
            "leash, and "
            "/usr/lib/leash/leashd); is Leash installed? (scripts/install)\n";
  return base::kExitRefused;
}

}  // namespace leash::cli
