// The UID -> policy map from its wire form (a full leash.v1.PolicyUpdate): each subject's
// policy compiled once, a subject sent as no_policy kept with its reason and fail_mode.
// Used for the test-only --initial-map start; the PolicyStream subscriber builds the same map
// from the stream.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "controlplane/sidecar_api/policy_subscriber.h"
#include "leash/v1/policy_stream.pb.h"

namespace leash::fswatch {

// InvalidArgument for a delta (full: false) or a UID listed twice.
absl::StatusOr<sidecar::SubjectMapPtr> SubjectMapFromUpdate(const leash::v1::PolicyUpdate& update);

// Reads a serialized PolicyUpdate (binary protobuf) from `path`. The error names the file.
absl::StatusOr<leash::v1::PolicyUpdate> ReadPolicyUpdateFile(const std::string& path);

}  // namespace leash::fswatch
