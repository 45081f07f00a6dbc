// The CheckTool gRPC service (leash.v1.Tools) that leashd hosts on its tools socket. The
// agent harness calls it before it runs any tool; it is the one surface a harness can reach
// from any language, so its answers are plain to read from grpcurl.
//
// What a caller sees — one answer per call, and one decision-log record per call:
//
//   allowed:  status OK, body CheckToolResponse{action: ACTION_ALLOW, reason, ref, findings}.
//             Findings of categories whose action is `log` are listed; the call may proceed.
//
//   blocked:  status PERMISSION_DENIED ("tool block = an error to the caller"), message
//             "<reason> (ref <ref>)". No body (gRPC sends none with an error), but the full
//             CheckToolResponse{action: ACTION_BLOCK, reason, ref, findings} travels twice in
//             the trailers:
//               - grpc-status-details-bin: a serialized google.rpc.Status{code: 7, message,
//                 details: [Any(leash.v1.CheckToolResponse)]} — gRPC's rich error model, which
//                 grpcurl prints as "Error details" and clients read with their status
//                 helpers (C++: grpc::Status::error_details());
//               - leash-check-tool-response-bin: the serialized CheckToolResponse alone, for
//                 clients without google/rpc/status.proto (Python: e.trailing_metadata()).
//             Blocks include: a name the registry refuses, inputs a blocking category flags,
//             inputs over tools.max_input_bytes under fail_mode closed, inputs nested deeper
//             than 32 levels or unparsable, and a subject with no resolved policy under its
//             fail_mode closed.
//
//   unknown caller/account: the status code the host's lookup returned (e.g. NOT_FOUND for
//             an account that is not a leashed subject, PERMISSION_DENIED for one the caller
//             may not act for), message "tools: <lookup's message> (ref <ref>)", and the same
//             two trailers with action ACTION_BLOCK.
//
//   too large for the transport: a request over RegisterToolsService's max_request_bytes is
//             refused by gRPC itself with RESOURCE_EXHAUSTED before this service sees it (not
//             logged). Set it above every subject's tools.max_input_bytes so that the policy,
//             not the transport, decides.
//
// The ref ties the answer to its decision-log line {ts, ref, uid, surface: "tools", action,
// reason, subject: {name, inputs (masked JSON)}, findings}. Secrets and personal data are
// masked (a short prefix and the last 4 characters) in the response, the record and every
// message; the raw value is never written. The answer is sent before the record is handed to
// the sink ("answer first, then log").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/compiled_policy.h"
#include "engine/decision_record.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/decision.pb.h"
#include "leash/v1/tools.grpc.pb.h"
#include "tools_api/tool_checker.h"

namespace leash::tools {

// The uid written to the decision log when the caller could not be identified ((uid_t)-1,
// which no account has).
inline constexpr uint32_t kUnknownUid = 0xFFFFFFFFu;

// Who a call is judged for, as the host (leashd) resolves it.
struct ToolSubject {
  uint32_t uid = kUnknownUid;
  // The subject's resolved policy. Null: the subject has no resolved policy (a dangling
  // profile, an unacknowledged loosening), and every call is answered under
  // `fail_mode_without_policy`: blocked, or allowed under the floor's fail_mode open.
  std::shared_ptr<const engine::CompiledPolicy> policy;
  engine::FailMode fail_mode_without_policy = engine::FailMode::kClosed;
};

// Resolves the subject of one call from the server context (leashd: SO_PEERCRED of the tools
// socket connection) and CheckToolRequest.account ("" = the caller's own account). An error
// (NOT_FOUND for an unknown account, PERMISSION_DENIED for an account the caller may not act
// for, ...) is answered with that code and logged as a block. Called on gRPC's threads;
// must be thread-safe.
using SubjectLookup = std::function<absl::StatusOr<ToolSubject>(
    const grpc::ServerContextBase& context, const std::string& requested_account)>;

struct ToolsServiceOptions {
  SubjectLookup lookup;                   // required
  engine::DecisionSink* sink = nullptr;   // required; must outlive the service
  std::function<absl::Time()> clock;      // the record's ts; default absl::Now
  std::function<uint64_t()> random_bits;  // the ref's randomness; default a seeded absl::BitGen
};

// The largest request the tools socket accepts by default: 16 MiB, well above the default
// tools.max_input_bytes (1 MiB), so that the policy's bound is the one that answers.
inline constexpr int kDefaultMaxRequestBytes = 16 << 20;

// Trailer carrying the serialized CheckToolResponse of a blocked call.
inline constexpr char kResponseTrailer[] = "leash-check-tool-response-bin";

// Implements leash.v1.Tools with the request read raw (see check_tool_request_view.proto),
// so inputs nested past protobuf's recursion budget are answered with a block and a reason
// rather than failing in gRPC's deserializer. Thread-safe.
class ToolsService final
    : public leash::v1::Tools::WithRawCallbackMethod_CheckTool<leash::v1::Tools::Service> {
 public:
  // InvalidArgument if lookup or sink is missing; Internal if the detectors fail to compile.
  static absl::StatusOr<std::unique_ptr<ToolsService>> Create(ToolsServiceOptions options);

  grpc::ServerUnaryReactor* CheckTool(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;

  // One call's answer: the status sent, the CheckToolResponse (body or trailers), and the
  // decision-log record.
  struct Answer {
    grpc::Status status;
    leash::v1::CheckToolResponse response;
    leash::v1::DecisionRecord record;
  };

  // Judges one serialized CheckToolRequest exactly as CheckTool does, without sending or
  // logging anything. For in-process hosts and tests.
  Answer Judge(const grpc::ServerContextBase& context, absl::string_view request) const;

 private:
  ToolsService(ToolsServiceOptions options, ToolChecker checker);

  ToolsServiceOptions options_;
  ToolChecker checker_;
};

// Registers `service` on `builder` (which must outlive neither) and caps incoming messages at
// `max_request_bytes`. leashd calls this for its tools socket, next to server reflection.
void RegisterToolsService(grpc::ServerBuilder& builder, ToolsService& service,
                          int max_request_bytes = kDefaultMaxRequestBytes);

}  // namespace leash::tools
