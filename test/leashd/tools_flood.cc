// Test helper: one account flooding the tools socket, as a misbehaving agent would. Opens
// `--connections` separate connections and keeps `--streams` CheckTool calls in flight on each
// for `--seconds`, every request `--bytes` long (one buffer shared by every call, so the
// flood costs this process little memory and the server all of it). Prints one summary line:
//
//   channels=<C> answered_channels=<A> calls=<N> codes=<code>:<count>,...
//
// answered_channels counts the connections on which at least one call got an answer from the
// service (a code other than UNAVAILABLE): a connection leashd refused never gets one. A lane
// whose call ends UNAVAILABLE stops (a refused connection would otherwise spin).
//   tools_flood <socket> [--connections=1] [--streams=1] [--bytes=64] [--seconds=1]
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/tools.pb.h"

namespace {

struct Flood {
  grpc::ByteBuffer request;
  std::chrono::steady_clock::time_point end;
  std::mutex mu;
  std::condition_variable done;
  int lanes_running = 0;
  std::map<int, int> codes;
  std::vector<int> answered_on_channel;
};

struct Lane {
  Flood* flood;
  grpc::GenericStub* stub;
  int channel;
  std::unique_ptr<grpc::ClientContext> context;
  grpc::ByteBuffer response;

  void Start() {
    context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    stub->UnaryCall(context.get(), "/leash.v1.Tools/CheckTool", grpc::StubOptions(),
                    &flood->request, &response, [this](grpc::Status status) { Finished(status); });
  }

  void Finished(const grpc::Status& status) {
    const int code = status.error_code();
    bool again;
    {
      std::lock_guard<std::mutex> lock(flood->mu);
      ++flood->codes[code];
      if (code != grpc::StatusCode::UNAVAILABLE) ++flood->answered_on_channel[channel];
      again = code != grpc::StatusCode::UNAVAILABLE &&
              std::chrono::steady_clock::now() < flood->end;
      if (!again && --flood->lanes_running == 0) flood->done.notify_all();
    }
    if (again) Start();
  }
};

int Flag(int argc, char** argv, absl::string_view name, int fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (int i = 2; i < argc; ++i) {
    absl::string_view arg = argv[i];
    int value = 0;
    if (absl::ConsumePrefix(&arg, prefix) && absl::SimpleAtoi(arg, &value)) return value;
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: tools_flood <socket> [--connections=N] [--streams=N] [--bytes=N] "
                 "[--seconds=N]\n");
    return 2;
  }
  const int connections = Flag(argc, argv, "connections", 1);
  const int streams = Flag(argc, argv, "streams", 1);
  const int bytes = Flag(argc, argv, "bytes", 64);
  const int seconds = Flag(argc, argv, "seconds", 1);

  leash::v1::CheckToolRequest request;
  request.set_name("read_file");
  // A JSON string of `bytes` characters in all.
  request.set_inputs_json(absl::StrCat("\"", std::string(bytes > 2 ? bytes - 2 : 0, 'a'), "\""));
  const std::string serialized = request.SerializeAsString();
  grpc::Slice slice(serialized);

  Flood flood;
  flood.request = grpc::ByteBuffer(&slice, 1);
  flood.end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  flood.answered_on_channel.assign(connections, 0);
  flood.lanes_running = connections * streams;

  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  std::vector<std::unique_ptr<Lane>> lanes;
  for (int c = 0; c < connections; ++c) {
    grpc::ChannelArguments args;
    // A channel of its own connection: subchannels are not shared between the channels.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxSendMessageSize(-1);
    stubs.push_back(std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
        absl::StrCat("unix:", argv[1]), grpc::InsecureChannelCredentials(), args)));
    for (int s = 0; s < streams; ++s) {
      lanes.push_back(std::unique_ptr<Lane>(new Lane{&flood, stubs.back().get(), c, nullptr, {}}));
    }
  }
  for (auto& lane : lanes) lane->Start();
  {
    std::unique_lock<std::mutex> lock(flood.mu);
    flood.done.wait(lock, [&] { return flood.lanes_running == 0; });
  }
  int answered_channels = 0;
  int calls = 0;
  for (int answered : flood.answered_on_channel) answered_channels += answered > 0 ? 1 : 0;
  std::vector<std::string> codes;
  for (const auto& [code, count] : flood.codes) {
    calls += count;
    codes.push_back(absl::StrCat(code, ":", count));
  }
  std::printf("channels=%d answered_channels=%d calls=%d codes=%s\n", connections,
              answered_channels, calls, absl::StrJoin(codes, ",").c_str());
  return 0;
}
