// The CheckTool service over a real gRPC server on a Unix socket under TEST_TMPDIR: answers
// and decision records in-process, over-deep and malformed requests answered as blocks (not
// INTERNAL), and the same API driven from separate processes — the C++ client and a Python
// client whose stubs are generated at build time.
#include "tools_api/tools_service.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/compiled_policy.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/rpc/status.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "leash/v1/tools.grpc.pb.h"
#include "test/fixtures/subprocess.h"
#include "tools_api/check_tool_request_view.pb.h"
#include "tools_api/testing/fixtures.h"
#include "tools_api/testing/service_harness.h"

namespace leash::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kGhp = absl::StrCat("ghp_", "R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV");
constexpr uint64_t kRandomBits = 0x123456789abcdefULL;
const absl::Time kNow = absl::FromUnixSeconds(1795000000);

std::shared_ptr<const engine::CompiledPolicy> Policy(uint64_t max_input_bytes = 1 << 20,
                                                    bool audit = false) {
  leash::v1::Config config;
  leash::v1::ToolsPolicy& tools = *config.mutable_tools();
  tools.set_mode(leash::v1::MODE_WHITELIST);
  tools.set_audit(audit);
  tools.mutable_allow()->add_entries("shell");
  tools.mutable_allow()->add_entries("read_file");
  tools.set_max_input_bytes(max_input_bytes);
  return std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
}

// A subject whose own tier put tools in audit, under a floor that denies floor_tool and
// inspects secrets with block: what leashd sends it (policy and audit_above, rule L4).
std::shared_ptr<const engine::CompiledPolicy> AuditedBelowAFloorDeny() {
  leash::v1::Config config;
  leash::v1::ToolsPolicy& tools = *config.mutable_tools();
  tools.set_mode(leash::v1::MODE_WHITELIST);
  tools.set_audit(true);
  tools.mutable_allow()->add_entries("shell");
  tools.mutable_allow()->add_entries("read_file");
  tools.mutable_allow()->add_entries("floor_tool");
  tools.mutable_deny()->add_entries("floor_tool");
  tools.mutable_deny()->add_entries("own_tool");
  leash::v1::Config above;
  above.mutable_tools()->set_mode(leash::v1::MODE_BLACKLIST);
  above.mutable_tools()->mutable_deny()->add_entries("floor_tool");
  (*above.mutable_tools()->mutable_inspect())["secrets"] = leash::v1::INSPECT_ACTION_BLOCK;
  return std::make_shared<const engine::CompiledPolicy>(
      engine::CompiledPolicy::Compile(config, {}, &above));
}

// A host's lookup: the caller's own account is uid 1000; a few named accounts cover the
// other cases.
absl::StatusOr<ToolSubject> Lookup(const grpc::ServerContextBase& context,
                                   const std::string& account) {
  if (context.peer().empty()) return absl::InternalError("no peer");
  if (account.empty()) return ToolSubject{1000, Policy()};
  if (account == "leash-small") return ToolSubject{1001, Policy(64)};
  if (account == "leash-audited") return ToolSubject{1004, Policy(1 << 20, /*audit=*/true)};
  if (account == "leash-audited-below") return ToolSubject{1005, AuditedBelowAFloorDeny()};
  if (account == "leash-broken") return ToolSubject{1002, nullptr, engine::FailMode::kClosed};
  if (account == "leash-broken-open") return ToolSubject{1003, nullptr, engine::FailMode::kOpen};
  return absl::NotFoundError(absl::StrCat("no leashed account '", account,
                                          "'; CheckToolRequest.account names a leash-* account"));
}

class ToolsServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartService(); }

  // (Re)starts the service under `limits`, with a new channel to it.
  void StartService(ToolsSocketLimits limits = {}) {
    stub_.reset();
    channel_.reset();
    harness_.reset();
    ToolsServiceOptions options;
    options.lookup = Lookup;
    options.sink = &sink_;
    options.clock = [] { return kNow; };
    options.random_bits = [] { return kRandomBits; };
    options.limits = limits;
    auto harness = testing::ServiceHarness::Start(std::getenv("TEST_TMPDIR"), std::move(options));
    ASSERT_TRUE(harness.ok()) << harness.status();
    harness_ = std::move(*harness);
    channel_ = grpc::CreateChannel(harness_->target(), grpc::InsecureChannelCredentials());
    stub_ = leash::v1::Tools::NewStub(channel_);
  }

  grpc::Status Call(const leash::v1::CheckToolRequest& request,
                    leash::v1::CheckToolResponse* response,
                    grpc::ClientContext* context = nullptr) {
    grpc::ClientContext local;
    if (context == nullptr) context = &local;
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub_->CheckTool(context, request, response);
  }

  // Sends raw request bytes, as a client whose messages the typed stubs could not build would.
  grpc::Status CallRaw(const std::string& request_bytes) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice slice(request_bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&context, "/leash.v1.Tools/CheckTool", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    done.WaitForNotification();
    return status;
  }

  // The response a blocked call carries in its rich error details.
  static leash::v1::CheckToolResponse Details(const grpc::Status& status) {
    google::rpc::Status details;
    leash::v1::CheckToolResponse response;
    EXPECT_TRUE(details.ParseFromString(status.error_details()));
    EXPECT_EQ(details.code(), status.error_code());
    EXPECT_EQ(details.message(), status.error_message());
    EXPECT_EQ(details.details_size(), 1);
    if (details.details_size() == 1) {
      EXPECT_TRUE(details.details(0).UnpackTo(&response));
    }
    return response;
  }

  // Waits (bounded) for `n` records: the service answers before it logs.
  std::vector<leash::v1::DecisionRecord> Records(size_t n) {
    EXPECT_TRUE(leash::testing::WaitFor([&] { return sink_.size() >= n; }, absl::Seconds(10)));
    return sink_.records();
  }

  testing::CollectingSink sink_;
  std::unique_ptr<testing::ServiceHarness> harness_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<leash::v1::Tools::Stub> stub_;
};

leash::v1::CheckToolRequest Request(const std::string& name, const std::string& inputs_json,
                                    const std::string& account = "") {
  leash::v1::CheckToolRequest request;
  request.set_name(name);
  request.set_inputs_json(inputs_json);
  request.set_account(account);
  return request;
}

TEST(RequestViewTest, HasCheckToolRequestsFieldNumbers) {
  const auto* real = leash::v1::CheckToolRequest::descriptor();
  const auto* view = leash::tools_api::CheckToolRequestView::descriptor();
  ASSERT_EQ(real->field_count(), view->field_count());
  for (int i = 0; i < real->field_count(); ++i) {
    const auto* field = view->FindFieldByName(real->field(i)->name());
    ASSERT_NE(field, nullptr) << real->field(i)->name();
    EXPECT_EQ(field->number(), real->field(i)->number()) << field->name();
  }
  leash::v1::CheckToolRequest request = Request("shell", "{}", "leash-x");
  request.mutable_inputs()->set_string_value("ls");
  leash::tools_api::CheckToolRequestView parsed;
  ASSERT_TRUE(parsed.ParseFromString(request.SerializeAsString()));
  EXPECT_EQ(parsed.name(), "shell");
  EXPECT_EQ(parsed.account(), "leash-x");
  EXPECT_EQ(parsed.inputs_json(), "{}");
  EXPECT_EQ(parsed.inputs(), request.inputs().SerializeAsString());
}

TEST_F(ToolsServiceTest, AllowedCallIsOkWithTheResponse) {
  leash::v1::CheckToolRequest request;
  request.set_name("read_file");
  (*request.mutable_inputs()->mutable_struct_value()->mutable_fields())["path"].set_string_value(
      "/home/fido/notes.md");
  leash::v1::CheckToolResponse response;
  const grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.action(), leash::v1::ACTION_ALLOW);
  // An allow tells the harness only that it is allowed; why is in the log under the ref.
  EXPECT_EQ(response.reason(), "tools: read_file allowed");
  EXPECT_EQ(response.ref(), engine::MakeRef(kRandomBits));

  const auto records = Records(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason(),
            "tools: read_file matches allow entry 'read_file'; inspection found nothing to flag");
  EXPECT_EQ(records[0].ref(), response.ref());
  EXPECT_EQ(records[0].uid(), 1000u);
  EXPECT_EQ(records[0].surface(), "tools");
  EXPECT_EQ(records[0].action(), "allow");
  EXPECT_EQ(records[0].ts(), "2026-11-18T11:06:40.000000Z");
  EXPECT_EQ(records[0].subject().name(), "read_file");
  EXPECT_EQ(records[0].subject().inputs(), R"({"path":"/home/fido/notes.md"})");
  EXPECT_EQ(records[0].severity(), "");
}

TEST_F(ToolsServiceTest, BlockIsPermissionDeniedWithReasonRefAndDetails) {
  leash::v1::CheckToolResponse response;
  grpc::ClientContext context;
  const grpc::Status status =
      Call(Request("shell", absl::StrCat(R"({"env":{"GH":")", kGhp, R"("}})")), &response, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const std::string ref = engine::MakeRef(kRandomBits);
  EXPECT_THAT(status.error_message(),
              HasSubstr("tools: shell inputs blocked by inspection: secrets (github_token at "
                        "$.env.GH; tools.inspect.secrets is block)"));
  EXPECT_THAT(status.error_message(), ::testing::EndsWith(absl::StrCat("(ref ", ref, ")")));

  const leash::v1::CheckToolResponse details = Details(status);
  EXPECT_EQ(details.action(), leash::v1::ACTION_BLOCK);
  EXPECT_EQ(details.ref(), ref);
  ASSERT_EQ(details.findings_size(), 1);
  EXPECT_EQ(details.findings(0).category(), "secrets");
  EXPECT_EQ(details.findings(0).detector(), "github_token");
  EXPECT_EQ(details.findings(0).json_path(), "$.env.GH");
  EXPECT_EQ(details.findings(0).masked(), "ghp_****W3oV");

  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kResponseTrailer);
  ASSERT_NE(it, trailers.end());
  leash::v1::CheckToolResponse from_trailer;
  ASSERT_TRUE(from_trailer.ParseFromString(std::string(it->second.data(), it->second.size())));
  EXPECT_EQ(from_trailer.SerializeAsString(), details.SerializeAsString());
}

// A tool name or `account` that holds a secret (an API key pasted in the wrong field) is masked
// in the log and never echoed back: not in the error message, the details, the trailer or the
// record; the masked form (prefix and last 4) is what shows. The long name (over
// kMaxToolNameBytes, quoted cut short) and the lookup's quoted account are masked too.
TEST_F(ToolsServiceTest, ToolNameOrAccountHoldingASecretIsMaskedInTheLogAndNeverEchoed) {
  const std::string masked = "ghp_****W3oV";
  struct Case {
    std::string name;
    std::string account;
  };
  const std::vector<Case> cases = {
      {kGhp, ""},                                  // not in the allow list: reason names it
      {absl::StrCat("run ", kGhp, " now"), ""},    // inside a longer name
      // Over the bound (quoted cut short). The detectors are those of the inputs: a key run
      // into the word before it (no \b) is no more found here than there.
      {absl::StrCat(std::string(40, 'x'), "-", kGhp, " ", std::string(300, 'y')), ""},
      {"shell", kGhp},                             // the lookup quotes the unknown account
  };
  size_t logged = 0;
  for (const Case& c : cases) {
    leash::v1::CheckToolResponse response;
    grpc::ClientContext context;
    const grpc::Status status = Call(Request(c.name, "{}", c.account), &response, &context);
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_THAT(status.error_message(), Not(HasSubstr(kGhp))) << c.name;
    EXPECT_THAT(status.error_message(), Not(HasSubstr(kGhp.substr(0, 12)))) << c.name;
    EXPECT_THAT(status.error_details(), Not(HasSubstr(kGhp))) << c.name;
    const auto& trailers = context.GetServerTrailingMetadata();
    for (const auto& [key, value] : trailers) {
      EXPECT_THAT(std::string(value.data(), value.size()), Not(HasSubstr(kGhp))) << key;
    }
    EXPECT_THAT(Details(status).reason(), Not(HasSubstr(kGhp)));
    if (c.name.size() <= kMaxToolNameBytes || !c.account.empty()) {
      EXPECT_THAT(status.error_message(), HasSubstr(masked)) << c.name;
    }
    const auto records = Records(++logged);
    ASSERT_EQ(records.size(), logged);
    const leash::v1::DecisionRecord& record = records.back();
    EXPECT_THAT(record.DebugString(), Not(HasSubstr(kGhp))) << record.DebugString();
    EXPECT_THAT(engine::DecisionLine(record), Not(HasSubstr(kGhp)));
    if (c.account.empty() && c.name.size() <= kMaxToolNameBytes) {
      EXPECT_THAT(record.subject().name(), HasSubstr(masked));
    }
  }
}

// An allowed call answers with the tool's name: a secret pasted as the name is masked there too
// (here allowed because the account's tools surface is audited, the name not in its list).
TEST_F(ToolsServiceTest, AnAllowedCallsAnswerNeverEchoesASecretName) {
  leash::v1::CheckToolResponse response;
  grpc::ClientContext context;
  const grpc::Status status = Call(Request(kGhp, "{}", "leash-audited"), &response, &context);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.action(), leash::v1::ACTION_ALLOW);
  EXPECT_THAT(response.SerializeAsString(), Not(HasSubstr(kGhp)));
  EXPECT_THAT(response.reason(), HasSubstr("ghp_****W3oV"));
  const auto records = Records(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_THAT(engine::DecisionLine(records.back()), Not(HasSubstr(kGhp)));
}

// Audit: the call is judged as the policy says; a block is answered allow (OK, no error) and
// logged once as the block with enforced: false, its reason there.
TEST_F(ToolsServiceTest, UnderAuditABlockIsAnsweredAllowAndLoggedNotEnforced) {
  leash::v1::CheckToolRequest request = Request("web_fetch", "{}");
  request.set_account("leash-audited");
  leash::v1::CheckToolResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.action(), leash::v1::ACTION_ALLOW);
  auto records = Records(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_THAT(records[0].reason(), HasSubstr("tools: web_fetch not in allow list"));
  EXPECT_EQ(records[0].uid(), 1004u);
  EXPECT_EQ(records[0].action(), "block");
  EXPECT_TRUE(records[0].has_enforced());
  EXPECT_FALSE(records[0].enforced());
  EXPECT_THAT(engine::DecisionLine(records[0]), HasSubstr("\"enforced\":false"));
  // Counted for `leash status` (before its line is handed to the sink), under the subject's
  // UID; a block enforced on another subject is not a would-be block.
  EXPECT_EQ(harness_->service().would_be_blocks().Count(1004, leash::v1::SURFACE_TOOLS), 1u);
  leash::v1::CheckToolRequest enforced = Request("web_fetch", "{}");
  EXPECT_EQ(Call(enforced, &response).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  records = Records(2);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(harness_->service().would_be_blocks().Count(1000, leash::v1::SURFACE_TOOLS), 0u);

  // An allowed call under audit is a plain allow.
  request = Request("read_file", "{}");
  request.set_account("leash-audited");
  status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  records = Records(3);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].action(), "allow");
  EXPECT_FALSE(records[2].has_enforced());
  EXPECT_EQ(harness_->service().would_be_blocks().Count(1004, leash::v1::SURFACE_TOOLS), 1u);
}

// The agent is never told it is audited: every field of the answer to an audited block, and
// its gRPC status and trailers, are what a plain allow of a clean call gets (but the ref,
// which is every call's own). The block, its reason and its findings are in the log only.
TEST_F(ToolsServiceTest, AnAuditedBlocksAnswerRevealsNothingAboutAudit) {
  struct Answered {
    grpc::Status status;
    leash::v1::CheckToolResponse response;
    std::multimap<std::string, std::string> trailers;
  };
  auto ask = [&](const std::string& name, const std::string& inputs, const std::string& account) {
    Answered out;
    grpc::ClientContext context;
    out.status = Call(Request(name, inputs, account), &out.response, &context);
    for (const auto& [key, value] : context.GetServerTrailingMetadata()) {
      out.trailers.emplace(std::string(key.data(), key.size()),
                           std::string(value.data(), value.size()));
    }
    return out;
  };
  // A registry block (not in the allow list) and an inspection block (a secret), each under
  // audit, beside a plain allow of the same tool with clean inputs on an unaudited subject.
  const std::string secret = absl::StrCat(R"({"env":{"GH":")", kGhp, R"("}})");
  const Answered plain = ask("shell", "{}", "");
  ASSERT_TRUE(plain.status.ok()) << plain.status.error_message();
  for (const auto& [name, inputs, account] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"web_fetch", "{}", "leash-audited"},
           {"shell", secret, "leash-audited"},
           {"own_tool", "{}", "leash-audited-below"}}) {
    const Answered audited = ask(name, inputs, account);
    EXPECT_TRUE(audited.status.ok()) << name << ": " << audited.status.error_message();
    EXPECT_EQ(audited.status.error_message(), plain.status.error_message()) << name;
    EXPECT_EQ(audited.status.error_details(), plain.status.error_details()) << name;
    EXPECT_EQ(audited.response.action(), leash::v1::ACTION_ALLOW) << name;
    EXPECT_EQ(audited.response.reason(), absl::StrCat("tools: ", name, " allowed")) << name;
    EXPECT_EQ(plain.response.reason(), "tools: shell allowed");
    EXPECT_EQ(audited.response.findings_size(), 0) << name;
    EXPECT_EQ(audited.trailers, plain.trailers) << name;
    // Field by field, the answer is the plain allow's with the name and ref of its own.
    leash::v1::CheckToolResponse expected = plain.response;
    expected.set_reason(audited.response.reason());
    expected.set_ref(audited.response.ref());
    EXPECT_EQ(audited.response.SerializeAsString(), expected.SerializeAsString()) << name;
    const std::string bytes = audited.response.SerializeAsString();
    for (const char* word : {"audit", "block", "enforced", "not in allow list", "deny", "secret",
                             "ghp_"}) {
      EXPECT_FALSE(absl::StrContains(bytes, word)) << name << " answer says " << word;
    }
  }
  // The log has each as the block it is, not enforced, with its reason and findings (the
  // lines may reach the sink in any order).
  std::map<std::string, leash::v1::DecisionRecord> blocks;
  for (const leash::v1::DecisionRecord& record : Records(4)) {
    if (record.action() == "block") blocks[absl::StrCat(record.uid(), " ", record.subject().name())] = record;
  }
  ASSERT_EQ(blocks.size(), 3u);
  for (const auto& [key, record] : blocks) {
    EXPECT_TRUE(record.has_enforced() && !record.enforced()) << key;
  }
  EXPECT_THAT(blocks["1004 web_fetch"].reason(), HasSubstr("not in allow list"));
  EXPECT_THAT(blocks["1004 shell"].reason(), HasSubstr("blocked by inspection: secrets"));
  EXPECT_EQ(blocks["1004 shell"].findings_size(), 1);
  EXPECT_THAT(blocks["1005 own_tool"].reason(), HasSubstr("matches deny entry 'own_tool'"));
}

// Rule L4 on the tools surface: a deny entry written above the tier that set audit stays
// enforced (an error to the caller, logged enforced: true), and so does a block the inspection
// written above makes; the audited tier's own decisions are audited.
TEST_F(ToolsServiceTest, AuditNeverLiftsADenyWrittenAboveIt) {
  leash::v1::CheckToolResponse response;
  const grpc::Status denied = Call(Request("floor_tool", "{}", "leash-audited-below"), &response);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("matches deny entry 'floor_tool'"));
  EXPECT_THAT(denied.error_message(), Not(HasSubstr("audit")));
  const grpc::Status inspected = Call(
      Request("shell", absl::StrCat(R"({"env":{"GH":")", kGhp, R"("}})"), "leash-audited-below"),
      &response);
  EXPECT_EQ(inspected.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const grpc::Status missed = Call(Request("web_fetch", "{}", "leash-audited-below"), &response);
  EXPECT_TRUE(missed.ok()) << missed.error_message();

  std::map<std::string, leash::v1::DecisionRecord> by_name;  // in any order
  for (const leash::v1::DecisionRecord& record : Records(3)) by_name[record.subject().name()] = record;
  ASSERT_EQ(by_name.size(), 3u);
  for (const char* name : {"floor_tool", "shell"}) {
    EXPECT_EQ(by_name[name].action(), "block") << name;
    EXPECT_TRUE(by_name[name].has_enforced() && by_name[name].enforced()) << name;
    EXPECT_THAT(engine::DecisionLine(by_name[name]), HasSubstr("\"enforced\":true")) << name;
  }
  EXPECT_EQ(by_name["web_fetch"].action(), "block");
  EXPECT_TRUE(by_name["web_fetch"].has_enforced() && !by_name["web_fetch"].enforced());
  // Only the block audit let through is a would-be block.
  EXPECT_EQ(harness_->service().would_be_blocks().Count(1005, leash::v1::SURFACE_TOOLS), 1u);
}

TEST_F(ToolsServiceTest, EveryCallIsLoggedOnceMaskedWithFindings) {
  leash::v1::CheckToolResponse response;
  Call(Request("shell", absl::StrCat(R"({"cmd":"curl -H 'Authorization: token )", kGhp,
                                     R"(' x","to":"alice@corp.io"})")),
       &response);
  Call(Request("web_fetch", absl::StrCat(R"({"t":")", kGhp, R"("})")), &response);
  // A record is written after its answer, so the second call's may come first: by name.
  auto records = Records(2);
  ASSERT_EQ(records.size(), 2u);
  std::sort(records.begin(), records.end(), [](const auto& x, const auto& y) {
    return x.subject().name() < y.subject().name();
  });
  EXPECT_EQ(records[0].action(), "block");
  EXPECT_EQ(records[0].subject().inputs(),
            R"({"cmd":"curl -H 'Authorization: token ghp_****W3oV' x","to":"al****io"})");
  ASSERT_EQ(records[0].findings_size(), 2);
  EXPECT_EQ(records[0].findings(0).detector(), "github_token");
  EXPECT_EQ(records[0].findings(1).detector(), "email");
  // A name the registry refuses: its inputs are neither read nor written.
  EXPECT_EQ(records[1].action(), "block");
  EXPECT_EQ(records[1].subject().name(), "web_fetch");
  EXPECT_EQ(records[1].subject().inputs(), "");
  for (const auto& record : records) {
    EXPECT_THAT(engine::DecisionLine(record), Not(HasSubstr(kGhp.substr(4))));
    EXPECT_THAT(engine::DecisionLine(record), Not(HasSubstr("alice@")));
  }
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(sink_.size(), 2u);  // once each
}

TEST_F(ToolsServiceTest, OverDeepValueIsABlockNotAnInternalError) {
  // 40 levels of objects: 121 nested messages, past the 100 that gRPC's typed deserializer
  // would accept. A typed client still builds it.
  leash::v1::CheckToolRequest request;
  request.set_name("shell");
  google::protobuf::Value* at = request.mutable_inputs();
  for (int i = 0; i < 40; ++i) at = &(*at->mutable_struct_value()->mutable_fields())["a"];
  at->set_string_value("x");
  leash::v1::CheckToolResponse response;
  const grpc::Status status = Call(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(),
              HasSubstr("tools: shell refused: inputs nest deeper than 32 levels"));
  EXPECT_EQ(Details(status).action(), leash::v1::ACTION_BLOCK);
}

TEST_F(ToolsServiceTest, HundredThousandLevelsOfRawValueAreABlock) {
  // [[[...]]] 100,000 deep, written as wire bytes (no protobuf library would serialize it).
  const std::string value_bytes = testing::NestedListValueBytes(100000);
  auto varint = [](size_t n) {
    std::string out;
    for (; n >= 0x80; n >>= 7) out.push_back(static_cast<char>(n | 0x80));
    out.push_back(static_cast<char>(n));
    return out;
  };
  const std::string request = "\x0a\x05shell" + std::string("\x12") + varint(value_bytes.size()) +
                              value_bytes;
  const grpc::Status status = CallRaw(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("inputs nest deeper than 32 levels"));
}

TEST_F(ToolsServiceTest, DeepInputsJsonIsABlock) {
  leash::v1::CheckToolResponse response;
  const grpc::Status status =
      Call(Request("shell", std::string(500000, '[') + std::string(500000, ']')), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("inputs nest deeper than 32 levels"));
}

TEST_F(ToolsServiceTest, MalformedRequestIsInvalidArgumentWithDetails) {
  const grpc::Status status = CallRaw("\x0a\x02\xff\xfe");  // name: invalid UTF-8
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("not a leash.v1.CheckToolRequest"));
  EXPECT_EQ(Details(status).action(), leash::v1::ACTION_BLOCK);
  EXPECT_EQ(Records(1).size(), 1u);
}

TEST_F(ToolsServiceTest, InputsInBothFieldsAreABlockNotAGuess) {
  // A null `inputs` is set (JSON null is a Value) and would be inspected in place of the call.
  leash::v1::CheckToolRequest request;
  request.set_name("read_file");
  request.mutable_inputs()->set_null_value(google::protobuf::NULL_VALUE);
  request.set_inputs_json(R"({"path":"/home/fido/notes.md"})");
  leash::v1::CheckToolResponse response;
  const grpc::Status status = Call(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("sets both inputs and inputs_json"));
  EXPECT_EQ(Details(status).action(), leash::v1::ACTION_BLOCK);
  const auto records = Records(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].action(), "block");
  EXPECT_EQ(records[0].uid(), 1000u);
}

TEST_F(ToolsServiceTest, OverSizedInputsAreABlockUnderFailModeClosed) {
  leash::v1::CheckToolResponse response;
  const grpc::Status status =
      Call(Request("shell", std::string(R"({"a":")") + std::string(100, 'b') + "\"}", "leash-small"),
           &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(),
              HasSubstr("inputs are 108 bytes, over tools.max_input_bytes (64)"));
  EXPECT_EQ(Records(1)[0].uid(), 1001u);
}

TEST_F(ToolsServiceTest, UnknownAccountIsTheLookupsError) {
  leash::v1::CheckToolResponse response;
  const grpc::Status status = Call(Request("shell", "{}", "leash-ghost"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("tools: no leashed account 'leash-ghost'"));
  EXPECT_EQ(Details(status).action(), leash::v1::ACTION_BLOCK);
  const auto records = Records(1);
  EXPECT_EQ(records[0].uid(), kUnknownUid);
  EXPECT_EQ(records[0].severity(), "critical");
  EXPECT_EQ(records[0].action(), "block");
}

TEST_F(ToolsServiceTest, SubjectWithoutPolicyIsBlockedOrAllowedByItsFailMode) {
  leash::v1::CheckToolResponse response;
  const grpc::Status closed = Call(Request("shell", "{}", "leash-broken"), &response);
  EXPECT_EQ(closed.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(closed.error_message(),
              HasSubstr("tools: uid 1002 has no resolved policy (run leash validate to see why); "
                        "blocked because fail_mode is closed"));
  const grpc::Status open = Call(Request("shell", "{}", "leash-broken-open"), &response);
  ASSERT_TRUE(open.ok()) << open.error_message();
  EXPECT_EQ(response.action(), leash::v1::ACTION_ALLOW);
  const auto records = Records(2);
  EXPECT_THAT(records[1].reason(), HasSubstr("allowed because fail_mode is open"));
  EXPECT_EQ(records[0].severity(), "critical");
  EXPECT_EQ(records[1].severity(), "critical");
  EXPECT_EQ(records[1].uid(), 1003u);
}

// Calls that send their headers and nothing more: each is admitted at its headers and stays in
// flight, holding a slot of its account's share, until it is ended. One whose slot was taken by
// another call when it arrived is refused at once; Replenish() opens another in its place.
class HeldCalls {
 public:
  HeldCalls(std::shared_ptr<grpc::Channel> channel, int count) : stub_(std::move(channel)) {
    slots_.resize(count);
    for (Slot& slot : slots_) Open(slot);
  }
  ~HeldCalls() { EndAll(); }

  void Replenish() {
    void* tag = nullptr;
    bool ok = false;
    while (cq_.AsyncNext(&tag, &ok, std::chrono::system_clock::now()) ==
           grpc::CompletionQueue::GOT_EVENT) {
      Handle(tag);
    }
  }

  // Cancels them all and waits until each has finished.
  void EndAll() {
    if (ended_) return;
    ended_ = true;
    for (Slot& slot : slots_) slot.context->TryCancel();
    for (Slot& slot : slots_) {
      if (!slot.finishing) Finish(slot);
    }
    while (finishing_ > 0) {
      void* tag = nullptr;
      bool ok = false;
      if (!cq_.Next(&tag, &ok)) break;
      Handle(tag);
    }
    cq_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
    }
  }

 private:
  enum Op : intptr_t { kStart = 0, kRead = 1, kFinish = 2 };
  struct Slot {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;
    grpc::ByteBuffer received;
    grpc::Status status;
    bool finishing = false;
  };
  void* Tag(size_t index, Op op) { return reinterpret_cast<void*>(index * 4 + op); }
  void Open(Slot& slot) {
    const size_t index = static_cast<size_t>(&slot - slots_.data());
    slot.context = std::make_unique<grpc::ClientContext>();
    slot.finishing = false;
    slot.call = stub_.PrepareCall(slot.context.get(), "/leash.v1.Tools/CheckTool", &cq_);
    slot.call->StartCall(Tag(index, kStart));
    // Completes only when the server ends the call (a held call gets no message).
    slot.call->Read(&slot.received, Tag(index, kRead));
  }
  void Finish(Slot& slot) {
    const size_t index = static_cast<size_t>(&slot - slots_.data());
    slot.finishing = true;
    ++finishing_;
    slot.call->Finish(&slot.status, Tag(index, kFinish));
  }
  void Handle(void* tag) {
    const intptr_t value = reinterpret_cast<intptr_t>(tag);
    Slot& slot = slots_[static_cast<size_t>(value / 4)];
    switch (static_cast<Op>(value % 4)) {
      case kStart:
        break;
      case kRead:  // the server ended it
        if (!slot.finishing) Finish(slot);
        break;
      case kFinish:
        --finishing_;
        if (!ended_) Open(slot);
        break;
    }
  }
  grpc::GenericStub stub_;
  grpc::CompletionQueue cq_;
  std::vector<Slot> slots_;
  int finishing_ = 0;
  bool ended_ = false;
};

// A call is admitted at its headers, before its message is read: calls that have sent only
// their headers hold their account's share (8), and the next call is refused unread with
// RESOURCE_EXHAUSTED, the reason in the message and the trailer, and one critical line in the
// log however many are refused within 10 s. The share comes back as the held calls end.
TEST_F(ToolsServiceTest, CallsOverTheAccountsShareAreRefusedUnreadAndLoggedOncePerInterval) {
  const int share = ToolsSocketLimits().max_calls_per_account;
  // Their own connection: the probe's must not be held up by that connection's stream limit.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  HeldCalls held(
      grpc::CreateCustomChannel(harness_->target(), grpc::InsecureChannelCredentials(), args),
      share);

  // The held calls reach the service in their own time; until then a probe is answered.
  grpc::Status refused;
  leash::v1::CheckToolResponse response;
  std::unique_ptr<grpc::ClientContext> probe;
  ASSERT_TRUE(leash::testing::WaitFor(
      [&] {
        // A held call that arrived while a probe held a slot was refused: open another.
        held.Replenish();
        probe = std::make_unique<grpc::ClientContext>();
        refused = Call(Request("read_file", "{}"), &response, probe.get());
        return refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
      },
      absl::Seconds(10)))
      << refused.error_code() << " " << refused.error_message();
  EXPECT_THAT(refused.error_message(),
              HasSubstr(absl::StrCat("already has ", share,
                                     " calls in flight, the most one account may; this call was "
                                     "refused unread")));
  EXPECT_THAT(refused.error_message(), HasSubstr("--tools-calls-per-account"));
  const auto trailer = probe->GetServerTrailingMetadata().find(kResponseTrailer);
  ASSERT_NE(trailer, probe->GetServerTrailingMetadata().end());
  leash::v1::CheckToolResponse trailed;
  ASSERT_TRUE(trailed.ParseFromString(std::string(trailer->second.data(), trailer->second.size())));
  EXPECT_EQ(trailed.action(), leash::v1::ACTION_BLOCK);
  EXPECT_EQ(trailed.reason(), refused.error_message());
  // A second refusal in the same 10 s is not written again.
  EXPECT_EQ(Call(Request("read_file", "{}"), &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  std::vector<leash::v1::DecisionRecord> refusals;
  for (const auto& record : sink_.records()) {
    if (record.reason().find("calls in flight") != std::string::npos) refusals.push_back(record);
  }
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].severity(), "critical");
  EXPECT_EQ(refusals[0].action(), "block");
  EXPECT_EQ(refusals[0].uid(), kUnknownUid) << "the harness names no caller";

  // Refused again and again while the share stays held: past the alive cap (96) of refusals in a
  // row, the account's connections are cut (gRPC would keep what it reads ahead in memory).
  grpc::Status last;
  int refused_calls = 0;
  for (; refused_calls <= 96; ++refused_calls) {
    last = Call(Request("read_file", "{}"), &response);
    if (last.error_message().find("in a row") != std::string::npos) break;
    ASSERT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << last.error_message();
  }
  EXPECT_THAT(last.error_message(),
              HasSubstr("was refused more than 96 calls in a row for holding its share of 8 calls "
                        "in flight; its connections to the tools socket are cut"));
  EXPECT_LE(refused_calls, 96) << "the refusals before the cut include the ones above";

  // The held calls end (their callers go away): the share is given back.
  held.EndAll();
  EXPECT_TRUE(leash::testing::WaitFor(
      [&] { return Call(Request("read_file", "{}"), &response).ok(); }, absl::Seconds(10)));
}

// A caller that waits for each answer before its next call is never refused, however fast it
// goes: its share is given back when its answer is sent, not when gRPC later tears the call
// down (which let some back-to-back calls be refused at a share of 8).
TEST_F(ToolsServiceTest, BackToBackCallsOfOneCallerAreNeverRefused) {
  ToolsSocketLimits limits;
  limits.max_calls_per_account = 1;
  ASSERT_NO_FATAL_FAILURE(StartService(limits));
  leash::v1::CheckToolResponse response;
  int refused = 0;
  for (int i = 0; i < 2000; ++i) {
    const grpc::Status status = Call(Request("read_file", "{}"), &response);
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++refused;
    ASSERT_TRUE(status.ok() || status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
        << status.error_message();
  }
  EXPECT_EQ(refused, 0) << "of 2000 back-to-back calls";
}

// --- separate client processes ---

TEST_F(ToolsServiceTest, CppClientProcess) {
  absl::StatusOr<std::string> allowed = leash::testing::RunOk(
      {"tools_api/check_tool_client", "--target", harness_->target(), "--name", "read_file",
       "--inputs", R"({"path":"/tmp/x"})"});
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_THAT(*allowed, HasSubstr("code: 0\naction: ACTION_ALLOW\n"));
  EXPECT_THAT(*allowed, HasSubstr(absl::StrCat("ref: ", engine::MakeRef(kRandomBits))));

  absl::StatusOr<std::string> blocked = leash::testing::RunOk(
      {"tools_api/check_tool_client", "--target", harness_->target(), "--name", "shell",
       "--inputs-json", R"({"argv":["rm","-rf","/"]})"});
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_THAT(*blocked, HasSubstr("code: 7\n"));
  EXPECT_THAT(*blocked, HasSubstr("details_code: 7\naction: ACTION_BLOCK\n"));
  EXPECT_THAT(*blocked, HasSubstr("finding: priv_esc rm_rf_root $.argv rm -rf /\n"));
  EXPECT_THAT(*blocked, HasSubstr("trailer_matches_details: true\n"));
  EXPECT_EQ(Records(2).size(), 2u);
}

TEST_F(ToolsServiceTest, PythonClientProcess) {
  // Both calls from one Python process: an allowed one, then a blocked one.
  absl::StatusOr<std::string> out = leash::testing::RunOk(
      {"/usr/bin/python3", "tools_api/testing/check_tool_client.py", "--target",
       harness_->target(), "--stubs", "tools_api/testing/py", "--call", "shell",
       R"({"to":"alice@corp.io"})", "--call", "shell", absl::StrCat(R"({"k":")", kGhp, "\"}")},
      absl::Seconds(60));
  ASSERT_TRUE(out.ok()) << out.status();
  const size_t second = out->find("call: 2\n");
  ASSERT_NE(second, std::string::npos) << *out;
  const std::string allowed = out->substr(0, second);
  const std::string blocked = out->substr(second);
  EXPECT_THAT(allowed, HasSubstr("call: 1\ncode: 0\naction: ACTION_ALLOW\n"));
  EXPECT_THAT(allowed, HasSubstr("finding: pii email $.to al****io\n"));

  EXPECT_THAT(blocked, HasSubstr("code: 7\n"));
  EXPECT_THAT(blocked, HasSubstr("message: tools: shell inputs blocked by inspection"));
  EXPECT_THAT(blocked, HasSubstr("details_code: 7\naction: ACTION_BLOCK\n"));
  EXPECT_THAT(blocked, HasSubstr("finding: secrets github_token $.k ghp_****W3oV\n"));
  EXPECT_THAT(blocked, HasSubstr("trailer_matches_details: true\n"));
  EXPECT_THAT(*out, Not(HasSubstr(kGhp)));
}

}  // namespace
}  // namespace leash::tools
