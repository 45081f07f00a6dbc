// The commands rule "a name entry also matches the program a same-named link on the system PATH
// resolves to" (`python3` -> /usr/bin/python3.11): leashd looks each name entry up on the
// system PATH, as a shell would, on every reconcile, and hands the engine (which makes no
// syscalls) the links it may trust, with the policy. `leash check commands <name>` (leashd, and
// the CLI offline) finds a bare name the same way and judges the program an exec would run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/compiled_policy.h"
#include "engine/decision.h"
#include "leash/v1/policy.pb.h"

namespace leash::host {

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

// The program an exec of the bare `name` runs, found as execvp finds it.
struct SystemProgram {
  // <folder>/<name>: the first one on the search path that is an executable file.
  std::string found;
  // Its canonical path (links followed): the path the watcher is told an exec runs.
  std::string program;
  // Root-controlled when the program is a regular file owned by root and writable by nobody
  // else, in a folder only root can write, not on FUSE: as the watcher judges an exec.
  engine::ProgramOrigin origin = engine::ProgramOrigin::kOther;
};

// The first folder of `search_path` holding `name` as an executable non-folder (following
// links), or nullopt when none does (then an exec of the name finds nothing to run).
std::optional<SystemProgram> FindOnSearchPath(absl::string_view name,
                                              absl::Span<const std::string> search_path);

// `leash check <surface> <subject>` as the host meets it: engine::DecideText, except that a
// bare command name is first found on `search_path` (FindOnSearchPath) and the program found
// is judged, since an exec of the name is judged by the program it runs, never by the name
// typed. `resolved` says what the name was found as, or that it was not found (then the name
// is judged as written); "" for every other subject. InvalidArgument as DecideText.
absl::StatusOr<engine::Decision> DecideCheckSubject(
    const engine::CompiledPolicy& policy, engine::Surface surface, absl::string_view subject,
    std::string& resolved, absl::Span<const std::string> search_path = SystemCommandPath());

}  // namespace leash::host
