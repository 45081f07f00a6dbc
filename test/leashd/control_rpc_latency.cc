// Control RPC round trip over leashd's admin socket: N calls of one small RPC (Check for the
// configured user, or ListBindings), one at a time, and the p50/p99/max of their wall time.
//   control_rpc_latency <admin socket> [calls=2000] [check|bindings]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "leash/v1/control.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: control_rpc_latency <admin socket> [calls] [check|bindings]\n");
    return 2;
  }
  const int calls = argc > 2 ? std::stoi(argv[2]) : 2000;
  const std::string rpc = argc > 3 ? argv[3] : "check";
  auto stub = leash::v1::Control::NewStub(
      grpc::CreateChannel(std::string("unix:") + argv[1], grpc::InsecureChannelCredentials()));
  std::vector<double> micros;
  for (int i = 0; i < calls + 100; ++i) {
    grpc::ClientContext context;
    const auto start = std::chrono::steady_clock::now();
    grpc::Status status;
    if (rpc == "bindings") {
      leash::v1::ListBindingsResponse response;
      status = stub->ListBindings(&context, {}, &response);
    } else {
      leash::v1::CheckRequest request;
      request.set_surface(leash::v1::SURFACE_NETWORK);
      request.set_subject("github.com:443");
      leash::v1::CheckResponse response;
      status = stub->Check(&context, request, &response);
    }
    const auto end = std::chrono::steady_clock::now();
    if (!status.ok()) {
      std::fprintf(stderr, "call failed: %s\n", status.error_message().c_str());
      return 1;
    }
    if (i >= 100) {  // the first 100 warm the channel
      micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
  }
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) { return micros[static_cast<size_t>(q * (micros.size() - 1))]; };
  std::printf("Control.%s round trip over %d calls: p50 %.0f us, p99 %.0f us, max %.0f us\n",
              rpc == "bindings" ? "ListBindings" : "Check", calls, at(0.50), at(0.99),
              micros.back());
  return 0;
}
