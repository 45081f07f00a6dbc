// /etc/subuid and /etc/subgid as leashd reads them: the parser is engine's
// (engine/subordinate_ids.h, shared with leash-fswatch); this adds the reading of the files.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/subordinate_ids.h"

namespace leash::controlplane {

using engine::kSubgidPath;
using engine::kSubuidPath;
using engine::NonFileSubidSources;
using engine::OwnerIsAccount;
using engine::ParseSubordinateIds;
using engine::ReadSubidNumber;
using engine::SubordinateIdFile;

inline constexpr char kNsswitchPath[] = "/etc/nsswitch.conf";

// Reads and parses `path`. A file that does not exist holds no ranges (a host without the
// shadow tools' defaults); any other read failure is an error ("I could not look").
absl::StatusOr<SubordinateIdFile> ReadSubordinateIds(const std::string& path);

}  // namespace leash::controlplane
