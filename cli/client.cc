#include "cli/client.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "engine/config_yaml.h"

namespace leash::cli {

Client::Client(std::string admin_socket, std::string tools_socket)
    : admin_socket_(std::move(admin_socket)), tools_socket_(std::move(tools_socket)) {
  // Answers (a status with every subject's policy, a validate of many profiles) can outgrow
  // gRPC's 4 MiB default on a large host; leashd is root's own daemon, so the CLI takes what it
  // sends up to a bound it states rather than one it inherits.
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxAnswerBytes);
  channel_ = grpc::CreateCustomChannel(absl::StrCat("unix:", admin_socket_),
                                       grpc::InsecureChannelCredentials(), arguments);
  control_ = leash::v1::Control::NewStub(channel_);
}

leash::v1::Tools::Stub& Client::tools() {
  if (!tools_) {
    tools_ = leash::v1::Tools::NewStub(grpc::CreateChannel(absl::StrCat("unix:", tools_socket_),
                                                           grpc::InsecureChannelCredentials()));
  }
  return *tools_;
}

std::unique_ptr<grpc::ClientContext> Client::Context(bool long_call) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(long_call ? 120 : 15));
  return context;
}

bool Client::Reachable() const {
  struct stat st;
  if (stat(admin_socket_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  return channel_->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::milliseconds(1500));
}

absl::Status Client::Explain(const grpc::Status& status, bool tools_socket) const {
  const std::string& socket = tools_socket ? tools_socket_ : admin_socket_;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED: {
      std::string why = "is leash.service running? (systemctl status leash.service)";
      if (!tools_socket && geteuid() != 0) {
        why = "the admin socket is root-only: run this command with sudo";
      }
      return absl::UnavailableError(
          absl::StrCat("leashd is not answering on ", socket, ": ", why));
    }
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(status.error_message());
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::PermissionDeniedError(status.error_message());
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(status.error_message());
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(status.error_message());
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      // gRPC's own words ("Received message larger than max (N vs. M)") name neither what was
      // too large nor the cap behind it.
      return absl::FailedPreconditionError(absl::StrCat(
          "the request or its answer is larger than the admin socket carries (",
          status.error_message(), "); a policy file may be at most ", engine::kMaxPolicyYamlBytes,
          " bytes (1 MiB): split it, or move long lists to a named list file"));
    default:
      return absl::InternalError(
          absl::StrCat("leashd answered ", status.error_code(), ": ", status.error_message()));
  }
}

}  // namespace leash::cli
