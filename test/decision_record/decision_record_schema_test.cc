// The decision record's schema, over every kind of line the writers produce, each made by the
// code that makes it in production and written by the sidecar log (AsyncDecisionLog) to one
// file, as leashd hands the writers one O_APPEND descriptor: network lines by the proxy's
// LogDecision/LogOutcome (allow, block, audited block, outcome, the critical refusal of a
// connection that was not redirected, made by root), file and exec lines by fswatch's Watcher
// (through its fake fanotify source), a tool line with findings by the CheckTool service over
// gRPC, and the "lost" line the log writes when its queue is full. Every line must carry ts,
// ref, uid, account, surface, action and reason, and a decision line its subject
// (docs/ARCHITECTURE.md, rule L1); uid 0 is written as 0 and named "root".
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/compiled_policy.h"
#include "engine/decision_line_read.h"
#include "engine/decision_record.h"
#include "fswatch/process_facts_linux.h"
#include "fswatch/testing/fake_fanotify_source.h"
#include "fswatch/watcher.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "leash/v1/tools.grpc.pb.h"
#include "proto/sidecar/decision_log.h"
#include "proxy/proxy_context.h"
#include "test/fixtures/subprocess.h"
#include "tools_api/testing/service_harness.h"

namespace leash {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kAgent = 1001;
const char kAgentAccount[] = "leash-iris";

std::string TestFile(const std::string& name) {
  return absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
}

int OpenForAppend(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out.append(buffer, n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return out;
}

std::shared_ptr<const engine::CompiledPolicy> AgentPolicy() {
  leash::v1::Config config;
  config.set_fail_mode("closed");
  config.mutable_filesystem()->set_mode(leash::v1::MODE_WHITELIST);
  config.mutable_filesystem()->mutable_allow()->add_entries("/t/ok");
  config.mutable_commands()->set_mode(leash::v1::MODE_WHITELIST);
  config.mutable_commands()->mutable_allow()->add_entries("/t/bin/ok");
  config.mutable_tools()->set_mode(leash::v1::MODE_WHITELIST);
  config.mutable_tools()->mutable_allow()->add_entries("shell");
  config.mutable_tools()->set_max_input_bytes(1 << 20);
  return std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
}

// The network writer: the proxy's own logging functions on a context whose sink is the log.
void WriteNetworkLines(sidecar::AsyncDecisionLog& log) {
  proxy::ProxyContext context;
  context.sink = &log;
  leash::v1::Subject subject;
  subject.set_domain("example.com");
  subject.set_ip("192.0.2.7");
  subject.set_port(443);
  engine::Decision allow;
  allow.verdict = engine::Verdict::kAllow;
  allow.reason = "network: example.com:443 matches allow entry 'example.com'";
  proxy::LogDecision(&context, kAgent, allow, subject, "netallow", false);
  engine::Decision block;
  block.verdict = engine::Verdict::kBlock;
  block.reason = "network: evil.example:443 not in allow list (whitelist)";
  proxy::LogDecision(&context, kAgent, block, subject, "netblock", false);
  engine::Decision audited = engine::UnderAudit(block, /*audited=*/true);
  proxy::LogDecision(&context, kAgent, audited, subject, "netaudit", false);
  proxy::LogOutcome(&context, kAgent, "netallow", subject, proxy::Outcome::kRefused,
                    "the upstream refused the connection");
  // A connection to a listener that was not redirected, made by root: logged under the
  // socket's owner as the listener manager's RefuseDirect logs it.
  engine::Decision refused;
  refused.verdict = engine::Verdict::kBlock;
  refused.reason = "network: a connection that was not redirected; made by uid 0 (root)";
  proxy::LogDecision(&context, 0, refused, subject, "netcrit0", /*critical=*/true, "root");
}

// The file and exec writer: fswatch's Watcher, judging events of the fake fanotify source,
// made by this test's own process, whose facts the real /proc reader reads.
void WriteFileLines(sidecar::AsyncDecisionLog& log) {
  fswatch::testing::FakeFanotifySource source;
  const fswatch::LinuxProcessFacts process_facts;
  fswatch::WatcherOptions options;
  options.self_pid = 4242;
  options.process_facts = &process_facts;
  fswatch::Watcher watcher(source, log, options);
  auto map = std::make_shared<policystream::SubjectMap>();
  policystream::SubjectEntry entry;
  entry.uid = kAgent;
  entry.account = kAgentAccount;
  entry.policy = AgentPolicy();
  (*map)[kAgent] = entry;
  watcher.Publish(map, 1);
  source.PushOpen(getpid(), kAgent, "/t/ok/file");
  source.PushOpen(getpid(), kAgent, "/t/no/file");
  source.PushExec(getpid(), kAgent, "/t/bin/no");
  while (source.pending() > 0) ASSERT_EQ(watcher.RunOnce(0), 0);
}

// The tools writer: a CheckTool call over gRPC whose inputs hold a secret.
void WriteToolLine(sidecar::AsyncDecisionLog& log) {
  tools::ToolsServiceOptions options;
  options.lookup = [](const grpc::ServerContextBase&,
                      const std::string&) -> absl::StatusOr<tools::ToolSubject> {
    return tools::ToolSubject{kAgent, AgentPolicy()};
  };
  options.sink = &log;
  auto harness = tools::testing::ServiceHarness::Start(getenv("TEST_TMPDIR"), std::move(options));
  ASSERT_TRUE(harness.ok()) << harness.status();
  auto stub = leash::v1::Tools::NewStub(
      grpc::CreateChannel((*harness)->target(), grpc::InsecureChannelCredentials()));
  leash::v1::CheckToolRequest request;
  request.set_name("shell");
  request.set_inputs_json(
      absl::StrCat(R"({"env":{"GH":")", "ghp_", "R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV", R"("}})"));
  leash::v1::CheckToolResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  const grpc::Status status = stub->CheckTool(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
}

// Fills a pipe so the next blocking write to it waits until someone reads.
void FillPipe(int write_fd) {
  const int flags = fcntl(write_fd, F_GETFL);
  ASSERT_EQ(fcntl(write_fd, F_SETFL, flags | O_NONBLOCK), 0);
  const std::string chunk(4096, 'x');
  while (write(write_fd, chunk.data(), chunk.size()) > 0) {
  }
  ASSERT_EQ(fcntl(write_fd, F_SETFL, flags), 0);
}

// The "lost" lines of a log whose queue filled: its writer stuck on a full pipe.
std::string LostLines() {
  int pipe_fds[2];
  EXPECT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  FillPipe(pipe_fds[1]);
  auto log = std::make_unique<sidecar::AsyncDecisionLog>(
      pipe_fds[1], 16, sidecar::DecisionLineGate::Limits(), leash::v1::SURFACE_NETWORK);
  for (int i = 0; i < 500; ++i) {
    engine::Decision block;
    block.verdict = engine::Verdict::kBlock;
    block.reason = "network: x";
    log->Record(engine::MakeDecisionRecord(absl::Now(), "r", kAgent, leash::v1::SURFACE_NETWORK,
                                           block, leash::v1::Subject()));
  }
  std::string drained;
  std::thread reader([&] { drained = ReadAll(pipe_fds[0]); });
  log->Flush();
  log.reset();
  reader.join();
  close(pipe_fds[0]);
  std::string lost;
  for (absl::string_view line : absl::StrSplit(drained, '\n', absl::SkipEmpty())) {
    const size_t brace = line.find('{');
    if (brace == absl::string_view::npos) continue;
    if (line.find("\"action\":\"lost\"") != absl::string_view::npos) {
      absl::StrAppend(&lost, line.substr(brace), "\n");
    }
  }
  return lost;
}

TEST(DecisionRecordSchema, EveryLineKindCarriesEveryKeyUidZeroIncluded) {
  const std::string path = TestFile("decisions.jsonl");
  {
    sidecar::AsyncDecisionLog network(OpenForAppend(path), 8192, {}, leash::v1::SURFACE_NETWORK);
    sidecar::AsyncDecisionLog files(OpenForAppend(path), 8192, {}, leash::v1::SURFACE_FILESYSTEM);
    sidecar::AsyncDecisionLog tools(OpenForAppend(path), 8192, {}, leash::v1::SURFACE_TOOLS);
    // Each writer is given its subjects' accounts from the policy map (leashd's lookup for
    // the tools service), as in production.
    for (sidecar::AsyncDecisionLog* log : {&network, &files, &tools}) {
      log->SetAccounts({{kAgent, kAgentAccount}});
    }
    WriteNetworkLines(network);
    WriteFileLines(files);
    WriteToolLine(tools);
    network.Flush();
    files.Flush();
    // The tools service answers before it logs: wait (bounded) for its line.
    EXPECT_TRUE(leash::testing::WaitFor(
        [&] {
          tools.Flush();
          const int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
          const std::string text = ReadAll(in);
          close(in);
          return text.find("\"surface\":\"tools\"") != std::string::npos;
        },
        absl::Seconds(20)));
  }
  const int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  std::string text = ReadAll(in);
  close(in);
  text += LostLines();

  std::map<std::string, int> kinds;  // what was seen, by kind
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    SCOPED_TRACE(line);
    // Keys are checked in the line itself: a reader of the file sees exactly these.
    google::protobuf::Struct json;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                    google::protobuf::StringPiece(line.data(), line.size()), &json)
                    .ok());
    const auto& f = json.fields();
    for (const char* key : {"ts", "ref", "uid", "account", "surface", "action", "reason"}) {
      EXPECT_TRUE(f.contains(key)) << "no " << key;
    }
    absl::StatusOr<leash::v1::DecisionRecord> record = engine::ReadDecisionLine(line);
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_FALSE(record->ts().empty());
    EXPECT_FALSE(record->ref().empty());
    EXPECT_TRUE(record->has_uid());
    EXPECT_FALSE(record->account().empty());
    EXPECT_FALSE(record->surface().empty());
    EXPECT_FALSE(record->reason().empty());
    const std::string& action = record->action();
    if (action == "allow" || action == "block" || action == "outcome") {
      EXPECT_TRUE(f.contains("subject")) << "a decision line names its subject";
    }
    if (record->uid() == kAgent) {
      EXPECT_EQ(record->account(), kAgentAccount);
    }
    if ((record->surface() == "filesystem" || record->surface() == "commands") &&
        (action == "allow" || action == "block")) {
      // The acting process of a file or exec line: this test's own.
      EXPECT_TRUE(f.contains("process")) << "a file or exec line names its process";
      EXPECT_EQ(record->process().pid(), static_cast<uint32_t>(getpid()));
      EXPECT_EQ(record->process().ppid(), static_cast<uint32_t>(getppid()));
      EXPECT_FALSE(record->process().exe().empty());
      EXPECT_FALSE(record->process().cmdline().empty());
      EXPECT_LT(line.find("\"subject\""), line.find("\"process\"")) << "process after subject";
    }
    std::string kind = absl::StrCat(record->surface(), "/", action);
    if (record->has_enforced() && !record->enforced()) kind += "/audited";
    if (record->severity() == "critical") kind += "/critical";
    if (record->findings_size() > 0) kind += "/findings";
    if (record->uid() == 0) {
      EXPECT_THAT(std::string(line), HasSubstr("\"uid\":0,\"account\":\"root\""));
      kind += "/uid0";
    }
    ++kinds[kind];
  }
  std::string seen;
  for (const auto& [kind, n] : kinds) absl::StrAppend(&seen, kind, " ");
  for (const char* kind :
       {"network/allow", "network/block", "network/block/audited", "network/outcome",
        "network/block/critical/uid0", "filesystem/allow", "filesystem/block", "commands/block",
        "tools/block/findings", "network/lost/critical"}) {
    EXPECT_TRUE(kinds.count(kind)) << "no " << kind << " line; seen: " << seen;
  }
}

}  // namespace
}  // namespace leash
