// CheckTool round trip through leashd's tools-socket server (UnixGrpcServer), with and without
// the relay that bounds the calls opened before the SETTINGS acknowledgement: a client sends
// calls at a fixed rate and the call times' percentiles are printed, so the relay's cost is the
// difference between two runs.
//   bazel run -c opt //controlplane:relay_latency -- --relay=1 --rate=1000 --seconds=10
//   bazel run -c opt //controlplane:relay_latency -- --relay=0 --rate=1000 --seconds=10
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controlplane/unix_grpc_server.h"
#include "engine/compiled_policy.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/tools.grpc.pb.h"
#include "tools_api/tools_service.h"

namespace leash::controlplane {
namespace {

class CountingSink : public engine::DecisionSink {
 public:
  void Record(leash::v1::DecisionRecord) override { ++count_; }
  std::atomic<long> count_{0};
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5), v.size() - 1)];
}

int Main(int argc, char** argv) {
  double rate = 1000, seconds = 10, relay = 1;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    auto value = [&](absl::string_view flag, double* out) {
      return absl::StartsWith(arg, flag) && absl::SimpleAtod(arg.substr(flag.size()), out);
    };
    if (!value("--rate=", &rate) && !value("--seconds=", &seconds) && !value("--relay=", &relay)) {
      fprintf(stderr, "usage: relay_latency [--relay=1|0] [--rate=1000] [--seconds=10]\n");
      return 2;
    }
  }
  std::string dir = "/tmp/relay-latency-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    perror("mkdtemp");
    return 1;
  }
  leash::v1::Config config;
  config.mutable_tools()->mutable_allow()->add_entries("shell");
  auto policy =
      std::make_shared<const engine::CompiledPolicy>(engine::CompiledPolicy::Compile(config));
  CountingSink sink;
  tools::ToolsServiceOptions options;
  options.sink = &sink;
  options.lookup = [policy](const grpc::ServerContextBase&, const std::string&) {
    return absl::StatusOr<tools::ToolSubject>(tools::ToolSubject{1000, policy});
  };
  auto service = tools::ToolsService::Create(std::move(options));
  if (!service.ok()) {
    fprintf(stderr, "%s\n", std::string(service.status().message()).c_str());
    return 1;
  }
  UnixSocketOptions socket;
  socket.name = "tools";
  socket.path = dir + "/tools.sock";
  socket.admit = [](const ucred&) { return true; };
  socket.max_streams_before_settings_ack = relay != 0 ? (*service)->limits().max_calls_per_account : 0;
  auto server = UnixGrpcServer::Start(socket, {}, [&](grpc::ServerBuilder& builder) {
    tools::RegisterToolsService(builder, **service);
  });
  if (!server.ok()) {
    fprintf(stderr, "%s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  auto stub = leash::v1::Tools::NewStub(
      grpc::CreateChannel("unix:" + socket.path, grpc::InsecureChannelCredentials()));
  leash::v1::CheckToolRequest request;
  request.set_name("shell");
  (*request.mutable_inputs()->mutable_struct_value()->mutable_fields())["cmd"].set_string_value(
      "ls -la /home/fido/work/src && git status --short");
  std::vector<double> call_ms;
  const long warmup = static_cast<long>(rate);
  const long n = static_cast<long>(rate * seconds) + warmup;
  const absl::Time start = absl::Now();
  for (long k = 0; k < n; ++k) {
    const absl::Duration wait = start + absl::Seconds(k / rate) - absl::Now();
    if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
    grpc::ClientContext context;
    leash::v1::CheckToolResponse response;
    const absl::Time sent = absl::Now();
    const grpc::Status status = stub->CheckTool(&context, request, &response);
    if (!status.ok()) {
      fprintf(stderr, "unexpected answer: %d %s\n", status.error_code(),
              status.error_message().c_str());
      return 1;
    }
    if (k >= warmup) call_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - sent));
  }
  char loadavg[64] = "?";
  if (FILE* f = fopen("/proc/loadavg", "r")) {
    if (fgets(loadavg, sizeof(loadavg), f) == nullptr) loadavg[0] = '\0';
    fclose(f);
  }
  printf("relay %s: %zu CheckTool calls at %.0f/s: call time p50 %.3f ms  p99 %.3f ms  max %.3f ms; "
         "load average %s",
         relay != 0 ? "on" : "off", call_ms.size(), rate, Percentile(call_ms, 50),
         Percentile(call_ms, 99), Percentile(call_ms, 100), loadavg);
  (*server)->Shutdown();
  rmdir(dir.c_str());
  return 0;
}

}  // namespace
}  // namespace leash::controlplane

int main(int argc, char** argv) { return leash::controlplane::Main(argc, argv); }
