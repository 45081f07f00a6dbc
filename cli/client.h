// The CLI's connection to leashd: the admin socket (Control) for every operator command, the
// tools socket (Tools) for `leash tool check`. A call that cannot reach leashd becomes exit
// code 3 with a message that says where it looked and what to check.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/control.grpc.pb.h"
#include "leash/v1/tools.grpc.pb.h"

namespace leash::cli {

inline constexpr char kDefaultAdminSocket[] = "/run/leash/leash.sock";
inline constexpr char kDefaultToolsSocket[] = "/run/leash/tools.sock";
// The largest answer the CLI takes from leashd.
inline constexpr int kMaxAnswerBytes = 64 << 20;

class Client {
 public:
  explicit Client(std::string admin_socket, std::string tools_socket = kDefaultToolsSocket);

  leash::v1::Control::Stub& control() { return *control_; }
  leash::v1::Tools::Stub& tools();

  // A context with a deadline suited to the call (writes wait for their reconcile).
  std::unique_ptr<grpc::ClientContext> Context(bool long_call = false) const;

  // Whether leashd answers on the admin socket right now (a short probe).
  bool Reachable() const;

  // The failure of a call as the operator should read it. Unavailable (exit 3) when leashd
  // is not there, with the socket and what to check.
  absl::Status Explain(const grpc::Status& status, bool tools_socket = false) const;

  const std::string& admin_socket() const { return admin_socket_; }

 private:
  std::string admin_socket_;
  std::string tools_socket_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<leash::v1::Control::Stub> control_;
  std::unique_ptr<leash::v1::Tools::Stub> tools_;
};

}  // namespace leash::cli
