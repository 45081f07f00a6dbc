// Test helper: calls Control.GetStatus on a Unix socket and exits 0 when the call succeeds,
// 1 when it fails (printing the gRPC status). Root tests run it as other accounts to show
// who the admin socket admits.
//   admin_probe <socket>
#include <iostream>

#include "grpcpp/grpcpp.h"
#include "leash/v1/control.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: admin_probe <socket>\n";
    return 2;
  }
  auto channel = grpc::CreateChannel(std::string("unix:") + argv[1],
                                     grpc::InsecureChannelCredentials());
  auto stub = leash::v1::Control::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  leash::v1::StatusResponse response;
  const grpc::Status status = stub->GetStatus(&context, leash::v1::StatusRequest(), &response);
  if (!status.ok()) {
    std::cout << "error " << status.error_code() << ": " << status.error_message() << "\n";
    return 1;
  }
  std::cout << "ok user=" << response.user() << " uid=" << response.uid() << "\n";
  return 0;
}
