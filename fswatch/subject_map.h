// The UID -> policy map from a file holding a full leash.v1.PolicyUpdate, for the test-only
// --initial-map start. Each subject is converted as the PolicyStream subscriber converts it
// (sidecar::MakeSubjectEntry).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "proto/policystream/subject_map.h"
#include "leash/v1/policy_stream.pb.h"

namespace leash::fswatch {

// InvalidArgument for a delta (full: false) or a UID listed twice.
absl::StatusOr<policystream::SubjectMapPtr> SubjectMapFromUpdate(const leash::v1::PolicyUpdate& update);

// Reads a serialized PolicyUpdate (binary protobuf) from `path`. The error names the file.
absl::StatusOr<leash::v1::PolicyUpdate> ReadPolicyUpdateFile(const std::string& path);

}  // namespace leash::fswatch
