// A relay between the agents' connections to the tools socket and gRPC, so that the bound on
// what one agent can make leashd hold is a number, not a race: gRPC 1.51 enforces
// SETTINGS_MAX_CONCURRENT_STREAMS only once the client has acknowledged it, and reads every
// stream opened before that ahead of the handlers that admit calls. Each connection gets a
// socketpair: gRPC is handed one end, and one thread (epoll, for every connection) copies bytes
// between the other end and the agent's socket through two fixed buffers that never grow. The
// agent's bytes pass through an H2SettingsGate (h2_settings_gate.h); gRPC's pass unparsed.
//   - A connection the gate refuses, or that holds streams past the limit until its buffer is
//     full without acknowledging the SETTINGS, is cut: both descriptors closed, on_cut told.
//   - EOF or an error on either side closes both; gRPC then sees its end close.
//   - When the agent does not read, the buffer toward it fills and the relay stops reading
//     gRPC's end, so that end's kernel send queue fills as if gRPC held the agent's socket
//     (UnixGrpcServer::PeerIsNotReading reads it there).
//   - Shutting gRPC's end (UnixGrpcServer::CutConnectionsOf) makes the relay close the agent's.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace leash::controlplane {

struct ConnectionRelayOptions {
  // New streams an agent may open before it acknowledges the server's SETTINGS.
  int max_streams_before_ack = 8;
  // Each direction's buffer, per connection.
  size_t buffer_bytes = 16 * 1024;
  // Called on the relay's thread when it cuts a connection, with the agent's credentials and
  // why; must not block for long.
  std::function<void(const ucred& cred, const std::string& why)> on_cut;
};

class ConnectionRelay {
 public:
  static absl::StatusOr<std::unique_ptr<ConnectionRelay>> Start(ConnectionRelayOptions options);
  // Stops the thread and closes every descriptor it holds.
  ~ConnectionRelay();

  // Takes `agent_fd` (non-blocking) and returns the end to hand to gRPC (non-blocking,
  // close-on-exec; the caller owns it). On error `agent_fd` is closed.
  absl::StatusOr<int> Add(int agent_fd, const ucred& cred);
  // Stops relaying and closes every descriptor the relay holds. Idempotent.
  void Stop();
  // Connections being relayed (for tests: none may be left once both sides are gone).
  size_t connections() const;

 private:
  struct Connection;
  ConnectionRelay(ConnectionRelayOptions options, int epoll_fd, int wake_fd);
  void Loop();
  void Adopt() ABSL_LOCKS_EXCLUDED(mu_);
  // Moves what it can in both directions; false when the connection is to be closed.
  bool Pump(Connection& connection);
  void Watch(Connection& connection);
  void Close(uint64_t id);

  const ConnectionRelayOptions options_;
  const int epoll_fd_;
  const int wake_fd_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> pending_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;
  // Owned by the relay's thread (after Stop has joined it, by Stop).
  std::map<uint64_t, std::unique_ptr<Connection>> live_;
  uint64_t next_id_ = 1;
};

}  // namespace leash::controlplane
