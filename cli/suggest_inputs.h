// What `leash suggest` reads from the host, behind three calls: an account's UIDs (passwd and
// /etc/subuid), the decision log's lines, and the policy files the consent judgement needs.
// It reads only; it never writes anything.
#pragma once

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/suggest_consent.h"
#include "engine/uid_ranges.h"

namespace leash::cli {

// `account`'s own UID and the subordinate ranges /etc/subuid (`subuid_path`) gives it (by name
// or by UID, as newuidmap reads them): the records of all of them are the subject's. NotFound
// naming the account when passwd has no such account.
absl::StatusOr<std::vector<engine::UidRange>> AccountUids(const std::string& account,
                                                          const std::string& subuid_path);

// Calls `on_line` with every line (without '\n') of the decision log at `path` and of the
// rotations logrotate keeps of it (`<path>.1`, the compressed `<path>.2.gz` and older;
// base/rotated_log.h), oldest first, from the newest file whose first line is well before
// `since` (older files cannot hold a line after it; all of them for InfinitePast()). Returns
// the files read, oldest first. NotFound naming `path` when neither it nor a rotation exists;
// a status naming the file for a read that fails or a compressed rotation that is damaged.
absl::StatusOr<std::vector<std::string>> ReadDecisionLog(
    const std::string& path, absl::Time since,
    absl::FunctionRef<void(absl::string_view)> on_line);

// The floor (`config_path`), bindings.yaml and every profile under `state_dir` (leashd's
// /var/lib/leash): what the consent judgement is asked about. A missing bindings file or
// profiles folder is none (a host with no agents yet); a profile that does not load is kept as
// its error, as leashd keeps it.
absl::StatusOr<HostPolicy> ReadHostPolicy(const std::string& config_path,
                                          const std::string& state_dir);

}  // namespace leash::cli
