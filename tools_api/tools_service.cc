#include "tools_api/tools_service.h"

#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/any.pb.h"
#include "google/rpc/status.pb.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "tools_api/check_tool_request_view.pb.h"
#include "engine/mask.h"

namespace leash::tools {
namespace {

// The default ref randomness: one generator shared by gRPC's threads.
std::function<uint64_t()> DefaultRandomBits() {
  struct Source {
    absl::Mutex mu;
    absl::BitGen gen ABSL_GUARDED_BY(mu);
  };
  auto source = std::make_shared<Source>();
  return [source] {
    absl::MutexLock lock(&source->mu);
    return absl::Uniform<uint64_t>(source->gen);
  };
}

grpc::StatusCode GrpcCode(absl::StatusCode code) {
  // absl and gRPC share the canonical code numbers.
  const int n = static_cast<int>(code);
  return n > 0 && n <= 16 ? static_cast<grpc::StatusCode>(n) : grpc::StatusCode::UNKNOWN;
}

// A blocked call's error: the reason and ref in the message; the response in the rich error
// details.
grpc::Status ErrorStatus(grpc::StatusCode code, const leash::v1::CheckToolResponse& response) {
  const std::string message = absl::StrCat(response.reason(), " (ref ", response.ref(), ")");
  google::rpc::Status details;
  details.set_code(code);
  details.set_message(message);
  details.add_details()->PackFrom(response);
  return grpc::Status(code, message, details.SerializeAsString());
}

// How often a refusing account's refusals reach the decision log.
constexpr absl::Duration kRefusalReportInterval = absl::Seconds(10);

}  // namespace

// One CheckTool call, taken at its headers: admitted against its account's share, then read,
// judged and answered; its share is given back as the answer goes out.
class ToolsService::CheckToolReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  CheckToolReactor(ToolsService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    uid_ = service->CallerUid(*context);
    if (!service->admission_.Opened(uid_)) {
      Finish(service->Cut(
          uid_, absl::StrCat("has more than ", service->admission_.max_alive(),
                             " calls alive (calls it keeps open, or answers it does not let "
                             "through)")));
      return;
    }
    if (service->CallerNotReading(*context)) {
      Finish(service->Cut(uid_, "opened a call while not reading what was already sent to it"));
      return;
    }
    switch (service->admission_.Admit(uid_)) {
      case CallAdmission::Admission::kAdmitted:
        break;
      case CallAdmission::Admission::kOverShare:
        Finish(service->RefuseOverShare(*context, uid_));
        return;
      case CallAdmission::Admission::kOverShareTooOften:
        Finish(service->Cut(
            uid_, absl::StrCat("was refused more than ", service->admission_.max_alive(),
                               " calls in a row for holding its share of ",
                               service->admission_.max_calls_per_account(),
                               " calls in flight")));
        return;
    }
    admitted_ = true;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The caller half-closed without a request, or went away.
      GiveBackShare();
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "tools: CheckTool takes one CheckToolRequest message"));
      return;
    }
    leash::tools_api::CheckToolRequestView view;
    bool parsed;
    {
      grpc::ProtoBufferReader reader(&request_);
      parsed = view.ParseFromZeroCopyStream(&reader);
    }
    request_.Clear();  // the parsed view holds what is needed
    Answer answer = service_->JudgeParsed(*context_, parsed, view);
    // Nothing of this object is touched after Finish: OnDone may run (and delete it) at once.
    ToolsService* const service = service_;
    leash::v1::DecisionRecord record = std::move(answer.record);
    GiveBackShare();
    if (answer.status.ok()) {
      bool own_buffer = false;
      grpc::Status serialized = grpc::SerializationTraits<leash::v1::CheckToolResponse>::Serialize(
          answer.response, &response_, &own_buffer);
      if (serialized.ok()) {
        StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
      } else {
        Finish(serialized);
      }
    } else {
      context_->AddTrailingMetadata(kResponseTrailer, answer.response.SerializeAsString());
      Finish(answer.status);
    }
    // Answered; now count and log ("never block an answer on logging").
    if (record.action() == "block" && record.has_enforced() && !record.enforced()) {
      service->would_be_blocks_.Add(record.uid(), leash::v1::SURFACE_TOOLS);
    }
    service->options_.sink->Record(std::move(record));
  }

  // A safety net: an admitted call always gets OnReadDone (false when cancelled), which gives
  // the share back.
  void OnDone() override {
    GiveBackShare();
    service_->admission_.Closed(uid_);
    delete this;
  }

 private:
  // The share is given back as the answer goes out, not in OnDone: gRPC may run OnDone after
  // the caller already has its answer and has sent its next call, which would then be refused.
  void GiveBackShare() {
    if (!admitted_) return;
    admitted_ = false;
    service_->admission_.Release(uid_);
  }

  ToolsService* const service_;
  grpc::CallbackServerContext* const context_;
  uint32_t uid_ = kUnknownUid;
  bool admitted_ = false;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

ToolsService::ToolsService(ToolsServiceOptions options, ToolChecker checker)
    : options_(std::move(options)),
      checker_(std::move(checker)),
      admission_(options_.limits.max_calls_per_account, kRefusalReportInterval) {
  // CheckTool (method 0) as a raw bidirectional callback stream. MarkMethodStreamed is the one
  // way grpc::Service offers to make a method BIDI_STREAMING; the handler it installs is then
  // replaced (and deleted) by MarkMethodRawCallback's, which serves the call.
  using Handler = grpc::internal::CallbackBidiHandler<grpc::ByteBuffer, grpc::ByteBuffer>;
  auto reactor = [this](grpc::CallbackServerContext* context) {
    return new CheckToolReactor(this, context);
  };
  MarkMethodStreamed(0, new Handler(reactor));
  MarkMethodRawCallback(0, new Handler(reactor));
}

uint32_t ToolsService::CallerUid(const grpc::ServerContextBase& context) const {
  if (!options_.caller_uid) return kUnknownUid;
  return options_.caller_uid(context).value_or(kUnknownUid);
}

void ToolsService::ReportThrottled(uint32_t uid, CallAdmission::Event event,
                                   const std::string& reason) {
  uint64_t unreported = 0;
  const absl::Time now = options_.clock();
  if (!admission_.ShouldReport(uid, event, now, unreported)) return;
  engine::Decision decision;
  decision.verdict = engine::Verdict::kBlock;
  decision.reason = unreported == 0
                        ? reason
                        : absl::StrCat(reason, " (", unreported,
                                       " more since the last such line, not written)");
  leash::v1::DecisionRecord record = engine::MakeDecisionRecord(
      now, engine::MakeRef(options_.random_bits()), uid, leash::v1::SURFACE_TOOLS, decision,
      leash::v1::Subject());
  record.set_severity("critical");
  options_.sink->Record(std::move(record));
}

grpc::Status ToolsService::RefuseOverShare(grpc::CallbackServerContext& context,
                                           uint32_t uid) {
  const std::string reason = absl::StrCat(
      "tools: uid ", uid, " already has ", admission_.max_calls_per_account(),
      " calls in flight, the most one account may; this call was refused unread; send it again "
      "once one is answered, or raise leashd --tools-calls-per-account");
  leash::v1::CheckToolResponse response;
  response.set_action(leash::v1::ACTION_BLOCK);
  response.set_reason(reason);
  context.AddTrailingMetadata(kResponseTrailer, response.SerializeAsString());
  ReportThrottled(uid, CallAdmission::Event::kRefused, reason);
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, reason);
}

grpc::Status ToolsService::Cut(uint32_t uid, const std::string& why) {
  const std::string reason =
      absl::StrCat("tools: uid ", uid, " ", why, "; its connections to the tools socket are cut");
  if (options_.cut_connections) options_.cut_connections(uid);
  ReportThrottled(uid, CallAdmission::Event::kCut, reason);
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, reason);
}

bool ToolsService::CallerNotReading(const grpc::ServerContextBase& context) const {
  return options_.caller_not_reading && options_.caller_not_reading(context);
}

absl::StatusOr<std::unique_ptr<ToolsService>> ToolsService::Create(ToolsServiceOptions options) {
  if (!options.lookup) {
    return absl::InvalidArgumentError("ToolsService needs a subject lookup");
  }
  if (options.limits.max_request_bytes <= 0 || options.limits.max_calls_per_account <= 0 ||
      options.limits.max_connections_per_account <= 0) {
    return absl::InvalidArgumentError("ToolsService's limits must all be positive");
  }
  if (options.sink == nullptr) {
    return absl::InvalidArgumentError("ToolsService needs a decision sink");
  }
  if (!options.clock) options.clock = [] { return absl::Now(); };
  if (!options.random_bits) options.random_bits = DefaultRandomBits();
  absl::StatusOr<ToolChecker> checker = ToolChecker::Create();
  if (!checker.ok()) return checker.status();
  return std::unique_ptr<ToolsService>(new ToolsService(std::move(options), std::move(*checker)));
}

ToolsService::Answer ToolsService::Judge(const grpc::ServerContextBase& context,
                                         absl::string_view request) const {
  leash::tools_api::CheckToolRequestView view;
  const bool parsed = view.ParseFromArray(request.data(), static_cast<int>(request.size()));
  return JudgeParsed(context, parsed, view);
}

ToolsService::Answer ToolsService::JudgeParsed(
    const grpc::ServerContextBase& context, bool parsed,
    const leash::tools_api::CheckToolRequestView& view) const {
  Answer answer;
  const absl::Time ts = options_.clock();
  const std::string ref = engine::MakeRef(options_.random_bits());
  leash::v1::CheckToolResponse& response = answer.response;
  response.set_ref(ref);

  engine::Decision decision;
  uint32_t uid = kUnknownUid;
  bool critical = false;
  std::string masked_inputs;
  std::vector<leash::v1::ToolFinding> findings;
  grpc::StatusCode error_code = grpc::StatusCode::PERMISSION_DENIED;
  if (!parsed) {
    decision.reason = "tools: the request is not a leash.v1.CheckToolRequest (invalid UTF-8 in "
                      "name or account, or malformed protobuf)";
    error_code = grpc::StatusCode::INVALID_ARGUMENT;
  } else if (absl::StatusOr<ToolSubject> subject = options_.lookup(context, view.account());
             !subject.ok()) {
    decision.reason = absl::StrCat("tools: ", subject.status().message());
    // The host's lookup may quote the account the call named: one that holds a secret is
    // masked here, so neither the answer nor the log repeats it.
    if (!view.account().empty()) {
      const std::string shown_account = checker_.MaskSensitive(view.account());
      if (shown_account != view.account()) {
        absl::StrReplaceAll({{view.account(), shown_account}}, &decision.reason);
      }
    }
    error_code = GrpcCode(subject.status().code());
    if (error_code == grpc::StatusCode::OK) error_code = grpc::StatusCode::PERMISSION_DENIED;
    critical = true;
  } else if (uid = subject->uid; subject->policy == nullptr) {
    // "A UID that is in the map with no resolved policy is the misconfiguration case":
    // denied, or allowed under fail_mode open.
    decision = engine::FailDecision(
        subject->fail_mode_without_policy, leash::v1::SURFACE_TOOLS,
        absl::StrCat("uid ", uid, " has no resolved policy (run leash validate to see why)"));
    critical = true;
  } else if (view.has_inputs() && !view.inputs_json().empty()) {
    // Which one a harness meant is a guess, and inspecting the other would judge arguments the
    // tool never sees (a null `inputs` beside the real call in `inputs_json`).
    decision.reason = "tools: the request sets both inputs and inputs_json; send the tool's "
                      "arguments in one of them";
    error_code = grpc::StatusCode::INVALID_ARGUMENT;
  } else {
    InputsFormat format = InputsFormat::kNone;
    absl::string_view inputs;
    if (view.has_inputs()) {
      format = InputsFormat::kSerializedValue;
      inputs = view.inputs();
    } else if (!view.inputs_json().empty()) {
      format = InputsFormat::kJson;
      inputs = view.inputs_json();
    }
    ToolCheckResult result = checker_.Check(*subject->policy, view.name(), format, inputs);
    // Audit: the call is judged as the policy says and a block is logged, not made, unless the
    // policy written above the tier that set audit blocks the same call (rule L4).
    decision = subject->policy->UnderAudit(
        leash::v1::SURFACE_TOOLS, std::move(result.decision),
        [&](const engine::CompiledPolicy& above) {
          return !checker_.Check(above, view.name(), format, inputs).decision.permits();
        });
    masked_inputs = std::move(result.masked_inputs);
    findings = std::move(result.findings);
  }

  response.set_action(decision.permits() ? leash::v1::ACTION_ALLOW : leash::v1::ACTION_BLOCK);
  // What the harness (and so the agent) reads: a block's reason and findings, so it can say
  // what to change; for an allow only that it is allowed, the rest in the log under the ref.
  // An audited block is answered as every allow is, so nothing in the answer tells the agent
  // it is audited: its reason and findings go to the log only.
  // The name as the log shows it (masked): a secret pasted as the name is never echoed back.
  const std::string shown_name(
      Utf8Prefix(checker_.MaskSensitive(view.name()), kMaxToolNameBytes));
  if (decision.permits()) {
    response.set_reason(absl::StrCat("tools: ", shown_name, " allowed"));
  } else {
    response.set_reason(decision.reason);
  }
  if (decision.enforced) {
    for (const leash::v1::ToolFinding& f : findings) *response.add_findings() = f;
  }
  answer.status = decision.permits() ? grpc::Status::OK : ErrorStatus(error_code, response);

  leash::v1::Subject subject;
  // Masked as the reason shows it (ToolChecker::Check): a secret pasted as the name is not
  // logged raw.
  subject.set_name(shown_name);
  subject.set_inputs(std::move(masked_inputs));
  answer.record = engine::MakeDecisionRecord(ts, ref, uid, leash::v1::SURFACE_TOOLS, decision,
                                             std::move(subject));
  if (critical) answer.record.set_severity("critical");
  for (leash::v1::ToolFinding& f : findings) *answer.record.add_findings() = std::move(f);
  return answer;
}

void RegisterToolsService(grpc::ServerBuilder& builder, ToolsService& service) {
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(service.limits().max_request_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             service.limits().max_calls_per_account);
}

}  // namespace leash::tools
