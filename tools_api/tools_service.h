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
//   too large for the transport: a request over ToolsSocketLimits::max_request_bytes is
//             refused by gRPC itself with RESOURCE_EXHAUSTED before this service sees it (not
//             logged). Set it above every subject's tools.max_input_bytes so that the policy,
//             not the transport, decides (leashd warns on every reconcile when it is not).
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
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/compiled_policy.h"
#include "engine/decision_record.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/decision.pb.h"
#include "leash/v1/tools.grpc.pb.h"
#include "proto/sidecar/would_be_blocks.h"
#include "tools_api/call_admission.h"
#include "tools_api/check_tool_request_view.pb.h"
#include "tools_api/tool_checker.h"

namespace leash::tools {

// The uid written to the decision log when the caller could not be identified.
using engine::kUnknownUid;

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

// What one caller of the tools socket can make leashd hold. The socket is shared by every
// agent account in its group, and an agent is the party Leash does not trust: without these
// bounds one account could open any number of calls of any size and run leashd out of memory
// (docs/PERFORMANCE.md has what a flood raised leashd's peak memory by, with and without
// them, and without them nothing stopped a caller from asking for more). With them,
// the requests one account can make leashd hold at once are at most
//   max_calls_per_account x max_request_bytes   (8 x 4 MiB by default)
// plus what the stream windows of its other live calls let in: answered or refused calls that
// gRPC cannot finish because the caller does not read, at most CallAdmission::max_alive() of
// them (4 x 8 + 64 = 96 by default) before the account's connections are cut. gRPC reads calls
// ahead of these handlers until the caller acknowledges the SETTINGS that carry the
// calls-per-connection cap, so leashd's relay (controlplane/connection_relay.h) lets at most
// max_calls_per_account calls through before that acknowledgement and cuts a caller that
// opens more without it: the bound does not depend on how fast gRPC reads.
// test/leashd's AnAgentFloodingTheToolsSocketIsBoundedAndStarvesNoOtherAgent holds leashd to
// that bound under a flood, with another agent's calls answered all through.
// Root is not limited: it acts for every account.
struct ToolsSocketLimits {
  // The largest request: 4 MiB, four times the default tools.max_input_bytes (1 MiB), so that
  // the policy's bound is the one that answers. leashd --tools-max-request-bytes.
  int max_request_bytes = 4 << 20;
  // Calls one account may have in flight, counted from their headers, before their message is
  // read (see CallAdmission); a call over it is refused RESOURCE_EXHAUSTED. It is also each
  // connection's SETTINGS_MAX_CONCURRENT_STREAMS, so one well-behaved client queues its own
  // calls rather than being refused. leashd --tools-calls-per-account.
  int max_calls_per_account = 8;
  // Connections one account may hold open (enforced when leashd accepts them, see
  // UnixSocketOptions::max_connections_per_uid). leashd --tools-connections-per-account.
  int max_connections_per_account = 8;
};

struct ToolsServiceOptions {
  SubjectLookup lookup;                   // required
  engine::DecisionSink* sink = nullptr;   // required; must outlive the service
  std::function<absl::Time()> clock;      // the record's ts; default absl::Now
  std::function<uint64_t()> random_bits;  // the ref's randomness; default a seeded absl::BitGen
  // The UID of the account that made the call (leashd: SO_PEERCRED of its connection), for
  // the per-account call limit; nullopt or unset: every call counts under kUnknownUid.
  std::function<std::optional<uint32_t>(const grpc::ServerContextBase& context)> caller_uid;
  ToolsSocketLimits limits;
  // Closes every connection `uid` has to the tools socket (leashd: UnixGrpcServer's
  // CutConnectionsOf), for an account with more calls alive than CallAdmission::max_alive().
  // Unset: the call is refused, and nothing is cut.
  std::function<void(uint32_t uid)> cut_connections;
  // Whether the caller is not reading what was already sent to it (leashd: the connection's
  // kernel send queue is half full, UnixGrpcServer::PeerIsNotReading). A call opened then has
  // the caller's connections cut: gRPC would hold every further answer in memory. Unset: never.
  std::function<bool(const grpc::ServerContextBase& context)> caller_not_reading;
};


// Trailer carrying the serialized CheckToolResponse of a blocked call.
inline constexpr char kResponseTrailer[] = "leash-check-tool-response-bin";

// Implements leash.v1.Tools. CheckTool is unary on the wire, but it is served as a raw
// bidirectional callback stream: gRPC reads a unary request whole before its handler runs,
// while a stream is handed over at its headers. So each call is admitted against its account's
// share (CallAdmission) before its message is read; then the request is read raw (see
// check_tool_request_view.proto), so inputs nested past protobuf's recursion budget are
// answered with a block and a reason rather than failing in gRPC's deserializer. The method
// stays registered under its name, so reflection and grpcurl see leash.v1.Tools. Thread-safe.
//
//   cut:      an account that opens a call while it has more than CallAdmission::max_alive()
//             calls alive (it keeps calls open, or does not open its flow-control window, so
//             gRPC cannot finish them), or while it is not reading what was sent to it (gRPC
//             would queue every further answer in memory), or after more than max_alive()
//             refusals in a row for holding its share (refusals end at once, but gRPC keeps what
//             it cannot write, and the calls it reads ahead of their handlers), has every
//             connection to the socket cut (ToolsServiceOptions::cut_connections), which ends all its calls; the call
//             gets RESOURCE_EXHAUSTED, and the decision log one critical line per account
//             every 10 s.
//
//   refused unread: a call over its account's share gets RESOURCE_EXHAUSTED, message naming the
//             account, the limit and the flag, and the CheckToolResponse trailer (action
//             ACTION_BLOCK, no ref). The decision log gets one critical line per account
//             every 10 s while refusals go on, with the count of the ones not written. Only
//             this refusal carries the trailer: a request over the size cap is also
//             RESOURCE_EXHAUSTED (gRPC's own, see above) but has none, and sending it again
//             will not help.
class ToolsService final : public leash::v1::Tools::Service {
 public:
  // InvalidArgument if lookup or sink is missing or a limit is not positive; Internal if the
  // detectors fail to compile.
  static absl::StatusOr<std::unique_ptr<ToolsService>> Create(ToolsServiceOptions options);
  const ToolsSocketLimits& limits() const { return options_.limits; }

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

  // Cuts every connection `uid` holds to the tools socket and writes the (rate-limited)
  // decision-log line, for misbehaviour found below the handlers: leashd's relay
  // (controlplane/connection_relay.h) calls it for a connection that opened more calls than
  // max_calls_per_account before acknowledging the server's HTTP/2 SETTINGS.
  void CutConnectionsOf(uint32_t uid, const std::string& why) { Cut(uid, why); }

  // The calls CheckTool answered allow under audit that the policy blocks (each logged with
  // enforced: false), per subject UID, since the service was created; Judge counts none.
  const sidecar::WouldBeBlockCounter& would_be_blocks() const { return would_be_blocks_; }

 private:
  class CheckToolReactor;
  ToolsService(ToolsServiceOptions options, ToolChecker checker);
  // Judge, on a request parsed (or not) already.
  Answer JudgeParsed(const grpc::ServerContextBase& context, bool parsed,
                     const leash::tools_api::CheckToolRequestView& view) const;
  uint32_t CallerUid(const grpc::ServerContextBase& context) const;
  // The answer to a call refused unread, and its (rate-limited) decision-log line.
  grpc::Status RefuseOverShare(grpc::CallbackServerContext& context, uint32_t uid);
  // Cuts the connections of an account that misbehaves (`why`); the answer to the call that
  // showed it, and its (rate-limited) decision-log line.
  grpc::Status Cut(uint32_t uid, const std::string& why);
  bool CallerNotReading(const grpc::ServerContextBase& context) const;
  // One critical decision-log line for `uid`, at most once per kind of event every 10 s.
  void ReportThrottled(uint32_t uid, CallAdmission::Event event, const std::string& reason);

  ToolsServiceOptions options_;
  ToolChecker checker_;
  CallAdmission admission_;
  sidecar::WouldBeBlockCounter would_be_blocks_;
};

// Registers `service` on `builder` (which must outlive neither), caps incoming
// messages at its limits().max_request_bytes and each connection's concurrent calls at
// limits().max_calls_per_account. leashd calls this for its tools socket, next to server
// reflection; the per-account connection limit is the socket's (UnixSocketOptions).
void RegisterToolsService(grpc::ServerBuilder& builder, ToolsService& service);

}  // namespace leash::tools
