// Opening the decision log once, in leashd: logging.decisions is a file path or "stdout". The
// descriptor is handed to the sidecars, which own no files.
//
// The log is written by root into a folder an operator chose, so the open trusts nothing it
// finds there: no symlink is followed, neither as the file nor as any folder on the way (a link
// planted by an agent would turn root's appends into a write to /etc/shadow); the folder and
// every folder above it must be writable by root alone (else whoever can write there can swap
// the file between check and open); and the file must be a regular file owned by root with one
// link (not a FIFO that blocks the writers, a device, or a hard link to a file elsewhere).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace leash::controlplane {

// Returns an O_APPEND descriptor for `sink` (a path, or "stdout" for a dup of fd 1). A missing
// file is created root-owned 0640, a missing last folder root-owned 0750. Errors:
// InvalidArgument for a relative path; FailedPrecondition naming the folder or file and the
// fix (`chmod go-w`, `chown root`) when a folder on the way is writable by anyone but root, is
// a symlink, or the file is not a regular root-owned single-link file; errno statuses otherwise.
absl::StatusOr<int> OpenDecisionLog(const std::string& sink);

}  // namespace leash::controlplane
