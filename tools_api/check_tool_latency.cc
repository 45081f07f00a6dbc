// CheckTool round trip over the Unix socket, paced: a client sends calls at a fixed rate
// (default 1,000/s for 10 s) to a ToolsService on a real gRPC server on a Unix socket, and
// prints latency percentiles. Latency is measured from each call's scheduled send time, so a
// slow call that delays the next ones is counted against them too (no coordinated omission).
// One call in ten (--blocked_every) carries a secret and is blocked (PERMISSION_DENIED with
// details).
// Target: p99 <= 1 ms at 1,000 calls/s.
//
//   bazel run -c opt //tools_api:check_tool_latency -- --rate=1000 --seconds=10
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "engine/compiled_policy.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/tools.grpc.pb.h"
#include "tools_api/testing/service_harness.h"

namespace leash::tools {
namespace {

// Discards records, as fast as the real sink's non-blocking enqueue.
class CountingSink : public engine::DecisionSink {
 public:
  void Record(leash::v1::DecisionRecord record) override { ++count_; }
  std::atomic<long> count_{0};
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string Summary(const std::vector<double>& ms) {
  return absl::StrCat("p50 ", absl::StrFormat("%.3f", Percentile(ms, 50)), " ms  p90 ",
                      absl::StrFormat("%.3f", Percentile(ms, 90)), " ms  p99 ",
                      absl::StrFormat("%.3f", Percentile(ms, 99)), " ms  p99.9 ",
                      absl::StrFormat("%.3f", Percentile(ms, 99.9)), " ms  max ",
                      absl::StrFormat("%.3f", Percentile(ms, 100)), " ms");
}

int Main(int argc, char** argv) {
  double rate = 1000, seconds = 10, warmup = 1, blocked_every = 10;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    auto value = [&](absl::string_view flag, double* out) {
      if (absl::StartsWith(arg, flag)) return absl::SimpleAtod(arg.substr(flag.size()), out);
      return false;
    };
    if (!value("--rate=", &rate) && !value("--seconds=", &seconds) &&
        !value("--warmup_seconds=", &warmup) && !value("--blocked_every=", &blocked_every)) {
      fprintf(stderr,
              "usage: check_tool_latency [--rate=1000] [--seconds=10] [--warmup_seconds=1] "
              "[--blocked_every=10 (0: none)]\n");
      return 2;
    }
  }

  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir_template = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/latency-XXXXXX");
  if (mkdtemp(dir_template.data()) == nullptr) {
    perror("mkdtemp");
    return 1;
  }
  leash::v1::Config config;
  config.mutable_tools()->mutable_allow()->add_entries("shell");
  auto policy = std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
  CountingSink sink;
  ToolsServiceOptions options;
  options.sink = &sink;
  options.lookup = [policy](const grpc::ServerContextBase&, const std::string&) {
    return absl::StatusOr<ToolSubject>(ToolSubject{1000, policy});
  };
  auto harness = testing::ServiceHarness::Start(dir_template, std::move(options));
  if (!harness.ok()) {
    fprintf(stderr, "%s\n", std::string(harness.status().message()).c_str());
    return 1;
  }
  auto stub = leash::v1::Tools::NewStub(
      grpc::CreateChannel((*harness)->target(), grpc::InsecureChannelCredentials()));

  leash::v1::CheckToolRequest allowed, blocked;
  allowed.set_name("shell");
  (void)google::protobuf::util::JsonStringToMessage(
      R"({"cmd":"ls -la /home/fido/work/src && git status --short","cwd":"/home/fido/work","timeout":30})",
      allowed.mutable_inputs());
  blocked.set_name("shell");
  (void)google::protobuf::util::JsonStringToMessage(
      R"({"cmd":"git push https://x:ghp_R8dKq2ZfT0wLx7NvB4mYc1HsJ9pEa6GuW3oV@github.com/o/r.git"})",
      blocked.mutable_inputs());

  auto run = [&](double duration, std::vector<double>* from_schedule, std::vector<double>* call,
                 long* allowed_count, long* blocked_count) {
    const long n = static_cast<long>(rate * duration);
    const absl::Time start = absl::Now() + absl::Milliseconds(5);
    for (long k = 0; k < n; ++k) {
      const absl::Time scheduled = start + absl::Seconds(k / rate);
      const absl::Duration wait = scheduled - absl::Now();
      if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
      const long every = static_cast<long>(blocked_every);
      const bool block = every > 0 && k % every == every - 1;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      leash::v1::CheckToolResponse response;
      const absl::Time sent = absl::Now();
      const grpc::Status status = stub->CheckTool(&context, block ? blocked : allowed, &response);
      const absl::Time done = absl::Now();
      if (status.ok() == block) {
        fprintf(stderr, "unexpected answer: %d %s\n", status.error_code(),
                status.error_message().c_str());
        exit(1);
      }
      if (from_schedule != nullptr) {
        from_schedule->push_back(absl::ToDoubleMilliseconds(done - std::max(scheduled, start)));
        call->push_back(absl::ToDoubleMilliseconds(done - sent));
        ++*(block ? blocked_count : allowed_count);
      }
    }
    return absl::Now() - start;
  };
  run(warmup, nullptr, nullptr, nullptr, nullptr);
  std::vector<double> from_schedule, call;
  long allowed_count = 0, blocked_count = 0;
  const absl::Duration elapsed = run(seconds, &from_schedule, &call, &allowed_count, &blocked_count);

  // The machine is shared: say how busy it was, since percentiles move with it.
  char loadavg[64] = "?";
  if (FILE* f = fopen("/proc/loadavg", "r")) {
    if (fgets(loadavg, sizeof(loadavg), f) == nullptr) loadavg[0] = '\0';
    fclose(f);
  }
  printf("load average at the end: %s", loadavg);
  printf("CheckTool round trip over a Unix socket: %zu calls at %.0f/s (%ld allowed, %ld blocked), "
         "achieved %.1f calls/s\n",
         call.size(), rate, allowed_count, blocked_count,
         call.size() / absl::ToDoubleSeconds(elapsed));
  printf("latency from scheduled send: %s\n", Summary(from_schedule).c_str());
  printf("call time (send to answer):  %s\n", Summary(call).c_str());
  printf("decision records: %ld\n", sink.count_.load());
  return 0;
}

}  // namespace
}  // namespace leash::tools

int main(int argc, char** argv) { return leash::tools::Main(argc, argv); }
