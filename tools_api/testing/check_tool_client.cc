// A CheckTool client in its own process, for the service tests: calls leash.v1.Tools/CheckTool
// over a Unix socket with the typed C++ stub and prints what came back, one "key: value" line
// each, reading a block's response from both trailers it travels in.
//
//   check_tool_client --target unix:/path/tools.sock --name shell
//       [--inputs '<json>' | --inputs-json '<json>'] [--account leash-x]
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "google/protobuf/util/json_util.h"
#include "google/rpc/status.pb.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/tools.grpc.pb.h"

namespace {

void Print(const leash::v1::CheckToolResponse& response) {
  std::cout << "action: " << leash::v1::Action_Name(response.action()) << "\n"
            << "reason: " << response.reason() << "\n"
            << "ref: " << response.ref() << "\n";
  for (const leash::v1::ToolFinding& f : response.findings()) {
    std::cout << "finding: " << f.category() << " " << f.detector() << " " << f.json_path() << " "
              << f.masked() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (!flags.count("--target") || !flags.count("--name")) {
    std::cerr << "usage: check_tool_client --target unix:PATH --name NAME [--inputs JSON | "
                 "--inputs-json JSON] [--account NAME]\n";
    return 2;
  }
  leash::v1::CheckToolRequest request;
  request.set_name(flags["--name"]);
  request.set_account(flags["--account"]);
  if (flags.count("--inputs")) {
    const auto parsed =
        google::protobuf::util::JsonStringToMessage(flags["--inputs"], request.mutable_inputs());
    if (!parsed.ok()) {
      std::cerr << "--inputs: " << parsed.ToString() << "\n";
      return 2;
    }
  }
  if (flags.count("--inputs-json")) request.set_inputs_json(flags["--inputs-json"]);

  auto channel = grpc::CreateChannel(flags["--target"], grpc::InsecureChannelCredentials());
  auto stub = leash::v1::Tools::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  leash::v1::CheckToolResponse response;
  const grpc::Status status = stub->CheckTool(&context, request, &response);
  std::cout << "code: " << status.error_code() << "\n";
  if (status.ok()) {
    Print(response);
    return 0;
  }
  std::cout << "message: " << status.error_message() << "\n";
  // The rich error model: google.rpc.Status with Any(CheckToolResponse) in its details.
  google::rpc::Status details;
  leash::v1::CheckToolResponse from_details;
  if (!details.ParseFromString(status.error_details()) || details.details_size() != 1 ||
      !details.details(0).UnpackTo(&from_details)) {
    std::cout << "details: missing\n";
    return 0;
  }
  std::cout << "details_code: " << details.code() << "\n";
  Print(from_details);
  // The plain trailer must carry the same response.
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("leash-check-tool-response-bin");
  leash::v1::CheckToolResponse from_trailer;
  const bool same = it != trailers.end() &&
                    from_trailer.ParseFromString(std::string(it->second.data(), it->second.size())) &&
                    from_trailer.SerializeAsString() == from_details.SerializeAsString();
  std::cout << "trailer_matches_details: " << (same ? "true" : "false") << "\n";
  return 0;
}
