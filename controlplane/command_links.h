// leashd's half of the commands rule "a name entry also matches the program a same-named link
// on the system PATH resolves to" (`python3` -> /usr/bin/python3.11): it looks each name entry
// up on the system PATH, as a shell would, on every reconcile, and hands the engine (which
// makes no syscalls) the links it may trust, with the policy.
#pragma once

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "engine/compiled_policy.h"
#include "leash/v1/policy.pb.h"

namespace leash::controlplane {

// The PATH leashd resolves names on: the system's folders, never an agent's own.
inline const std::vector<std::string>& SystemCommandPath() {
  static const std::vector<std::string> path = {"/usr/local/sbin", "/usr/local/bin",
                                                "/usr/sbin",       "/usr/bin",
                                                "/sbin",           "/bin"};
  return path;
}

// For each name entry of `config`'s commands lists (allow and deny), the first folder of
// `search_path` holding that name: when it is a symbolic link (or a chain of them, at most 8)
// whose every link and whose final target are root-controlled (owned by root, writable by
// nobody else, in a folder only root can write), one {name, target}, target the final file's
// canonical path. A name held by a regular file there, or by nothing, or by a link that fails
// the ownership test gives nothing (the name entry still matches by name). Sorted by name.
std::vector<engine::CommandLink> ResolveCommandLinks(const leash::v1::Config& config,
                                                     absl::Span<const std::string> search_path);

}  // namespace leash::controlplane
