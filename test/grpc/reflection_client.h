// A minimal gRPC server-reflection client for tests: lists the services a server exposes, the
// way `grpcurl -plaintext -unix <socket> list` does. Debian ships neither grpcurl nor the
// reflection .proto, so it speaks grpc.reflection.v1alpha.ServerReflection with a generic
// stub, encoding the one request field and decoding the one response field it needs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leash::testing {

// The fully qualified service names the server at unix socket `socket_path` lists, sorted.
absl::StatusOr<std::vector<std::string>> ListServicesByReflection(const std::string& socket_path);

}  // namespace leash::testing
