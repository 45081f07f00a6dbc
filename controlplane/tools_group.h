// The group that may reach the tools socket. It is Leash's own (leash-tools by default), never
// the leashed user's: /etc/leash/leash.yaml is root:<leashed user's group> 0640, so a socket
// reached through that group would make every account given CheckTool a reader of the policy.
// leashd creates the group at start when it is missing (scripts/install does too), adds the
// configured user to it (the harness that calls CheckTool for its agents runs as that user),
// and says so: on a host installed before the group existed that is the upgrade.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leash::controlplane {

inline constexpr char kDefaultToolsGroup[] = "leash-tools";

struct ToolsGroup {
  gid_t gid = 0;
  std::string name;
  // One line each, for leashd's log: what changed on this host and how to add an account.
  std::vector<std::string> notices;
};

// Looks `name` up, creating it as a system group (groupadd --system) when missing and adding
// `user` to it then. `socket_path`: the tools socket a previous leashd may have left, whose
// group is named in the notice when it differs. Errors: Internal naming the command that failed
// and the one to run by hand.
absl::StatusOr<ToolsGroup> EnsureToolsGroup(const std::string& name, const std::string& user,
                                            const std::string& socket_path);

}  // namespace leash::controlplane
