// `leash tool check <name> [--inputs '<json>'] [--account <account>]`: one CheckTool call on
// the tools socket, exactly as an agent harness makes it. Inputs come from --inputs, or from
// standard input when it is "-" or absent and stdin is not a terminal.
#include <unistd.h>

#include <iostream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/offline.h"
#include "cli/render.h"
#include "google/protobuf/util/json_util.h"

namespace leash::cli {

int RunToolCheck(const Args& args, Io io) {
  if (args.words.size() != 3 || args.words[1] != "check") {
    io.err << "usage: leash tool check <name> [--inputs '<json>'|-] [--account <account>]\n";
    return base::kExitUsage;
  }
  std::string inputs = args.Option("inputs", isatty(STDIN_FILENO) ? "" : "-");
  if (inputs == "-") {
    inputs.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  leash::v1::CheckToolRequest request;
  request.set_name(args.words[2]);
  request.set_inputs_json(inputs.empty() ? "{}" : inputs);
  request.set_account(args.Option("account"));
  Client client(args.Option("socket", kDefaultAdminSocket),
                args.Option("tools-socket", kDefaultToolsSocket));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  leash::v1::CheckToolResponse response;
  const grpc::Status status = client.tools().CheckTool(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // The caller (or the --account named) is no subject leashd enforces: nothing was judged,
    // which a script must be able to tell from a block.
    io.err << "leash tool check: " << status.error_message() << "\n";
    if (request.account().empty()) {
      io.err << "  add --account <agent account> to check a call as that agent would make it"
             << (geteuid() == 0 ? " (you are root, which is no leashed subject)" : "")
             << "; `leash status` lists the subjects\n";
    }
    return base::kExitNotSubject;
  }
  if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    // A block is an error to the caller; its full answer rides in the trailers (and, for
    // clients of gRPC's rich error model, in the status details: docs/OPERATIONS.md).
    const auto& trailers = context.GetServerTrailingMetadata();
    auto it = trailers.find("leash-check-tool-response-bin");
    if (it != trailers.end()) {
      response.ParseFromString(std::string(it->second.data(), it->second.size()));
    } else {
      response.set_action(leash::v1::ACTION_BLOCK);
      response.set_reason(status.error_message());
    }
  } else if (!status.ok()) {
    absl::Status explained = client.Explain(status, /*tools_socket=*/true);
    io.err << "leash tool check: " << explained.message() << "\n";
    return absl::IsUnavailable(explained) ? base::kExitUnreachable : base::kExitRefused;
  }
  if (args.json) {
    io.out << ToJson(response) << "\n";
  } else {
    const bool allowed = response.action() == leash::v1::ACTION_ALLOW;
    io.out << (allowed ? "allow" : "block") << "  " << response.reason() << "  (ref "
           << response.ref() << ")\n";
    for (const leash::v1::ToolFinding& f : response.findings()) {
      io.out << "  " << f.category() << "/" << f.detector() << " at " << f.json_path() << ": "
             << f.masked() << "\n";
    }
  }
  return response.action() == leash::v1::ACTION_ALLOW ? base::kExitOk : base::kExitRefused;
}

}  // namespace leash::cli
