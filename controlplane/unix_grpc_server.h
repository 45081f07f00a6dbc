// A gRPC server on a Unix socket that checks who is calling. gRPC's Unix transport does not
// check the caller's identity, so leashd listens itself, reads each accepted connection's
// SO_PEERCRED, refuses (and logs) the ones its admit rule rejects, and hands the rest to the
// server (grpc::AddInsecureChannelFromFd). Handlers can ask for the credentials of the
// connection a call arrived on. Server reflection is on, so `grpcurl -plaintext -unix <socket>
// list` works. Abstract-namespace sockets are refused: they carry no file permissions, so any
// local account could connect.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controlplane/connection_relay.h"
#include "grpcpp/grpcpp.h"

namespace leash::controlplane {

struct UnixSocketOptions {
  // "admin" or "tools": names the socket in refusals.
  std::string name;
  std::string path;
  // 0600 for the admin socket; 0660 for the tools socket with its group.
  mode_t mode = 0600;
  std::optional<gid_t> group;
  // Decides on each accepted connection; a refused one is closed and logged to stderr.
  std::function<bool(const ucred&)> admit;
  // The most connections one account (peer UID) may hold open at once; a connection over it
  // is refused. 0: no limit. Root is never limited: it acts for every account. This is what
  // keeps one caller of a group-shared socket from holding every connection, and (with a cap
  // on the calls per connection and on a request's size) from making leashd hold an unbounded
  // amount of memory for it.
  int max_connections_per_uid = 0;
  // When > 0, every admitted connection reaches gRPC through a ConnectionRelay
  // (connection_relay.h) that lets at most this many calls be opened on it before the caller
  // acknowledges the server's HTTP/2 SETTINGS (which carry the calls-per-connection cap gRPC
  // enforces from then on), and cuts the connection of a caller that goes past it. 0: gRPC
  // reads the accepted socket itself (the admin socket: root only).
  int max_streams_before_settings_ack = 0;
  // Told (on the relay's thread) of each connection the relay cut, with the caller's
  // credentials and why.
  std::function<void(const ucred& cred, const std::string& why)> on_relay_cut;
};

class UnixGrpcServer {
 public:
  // Binds and listens on options.path (replacing a stale socket file, never another kind of
  // file), registers `services` (not owned; they must outlive the server), and starts
  // accepting. Errors name the path and the cause.
  // `configure` may register more services or set builder options (e.g. the tools service's
  // message size cap) before the server is built.
  static absl::StatusOr<std::unique_ptr<UnixGrpcServer>> Start(
      UnixSocketOptions options, const std::vector<grpc::Service*>& services,
      const std::function<void(grpc::ServerBuilder&)>& configure = nullptr);
  ~UnixGrpcServer();

  // Stops accepting, shuts the server down (in-flight calls get `deadline`), removes the
  // socket file.
  void Shutdown(absl::Duration deadline = absl::Seconds(2));

  // The credentials of the connection `context`'s call arrived on; nullopt if unknown.
  std::optional<ucred> PeerOf(const grpc::ServerContextBase& context) const;

  const std::string& path() const { return options_.path; }
  // Connections refused since start, by the admit rule or the per-account limit.
  uint64_t refused() const;

  // Whether the peer of the connection `context`'s call arrived on is not reading what it was
  // sent: the kernel's send queue of that connection is at least half full (on a relayed socket,
  // of gRPC's end of the pair: the relay stops reading it when its buffer toward the caller is
  // full). gRPC queues what
  // the kernel will not take in its own memory, without a bound, so a caller that keeps opening
  // calls without reading the answers would grow leashd without end. False when unknown.
  bool PeerIsNotReading(const grpc::ServerContextBase& context) const;

  // Shuts down (both ways) every connection `uid` holds, so that gRPC ends all its calls; for
  // an account that misbehaves on a shared socket. On a relayed socket the descriptor shut is
  // gRPC's end of the pair, and the relay then closes the caller's socket. Returns how many were cut. A descriptor is
  // shut only if it still names the socket that was accepted (device and inode), checked under
  // the lock just before.
  int CutConnectionsOf(uid_t uid);

 private:
  UnixGrpcServer(UnixSocketOptions options, int listen_fd, int wake_fd,
                 std::unique_ptr<grpc::Server> server, std::unique_ptr<ConnectionRelay> relay);
  void AcceptLoop();
  // Why a newly accepted connection from `cred` must be refused ("" to admit it).
  std::string RefusalOf(const ucred& cred) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets connections gRPC has closed since the last call.
  void ForgetClosed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Connection;
  // The descriptor of a recorded connection ("fd:N"), or -1 when gRPC has closed it (the
  // number no longer names the same socket).
  static int LiveDescriptor(const std::string& key, const Connection& connection);
  // The stderr line for one refusal, or "" when it is not to be written: at most one per
  // account every 10 s (with the count of the ones not written), so that a caller retrying in
  // a loop cannot flood the journal.
  std::string RefusalLine(const ucred& cred, bool known, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const UnixSocketOptions options_;
  const int listen_fd_;
  const int wake_fd_;
  std::unique_ptr<grpc::Server> server_;
  // Null unless options_.max_streams_before_settings_ack > 0.
  std::unique_ptr<ConnectionRelay> relay_;
  std::thread accept_thread_;
  mutable absl::Mutex mu_;
  // An admitted connection, as handed to gRPC. gRPC closes the descriptor when the connection
  // ends; the number may then be reused, so an entry is live only while its descriptor still
  // names the same socket (device and inode).
  struct Connection {
    ucred cred;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  // Keyed by the peer string gRPC reports for a channel made from a descriptor ("fd:N").
  std::map<std::string, Connection> peers_ ABSL_GUARDED_BY(mu_);
  struct RefusalLog {
    absl::Time last_written = absl::InfinitePast();
    uint64_t unwritten = 0;
  };
  std::map<uid_t, RefusalLog> refusal_log_ ABSL_GUARDED_BY(mu_);
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

// The directory sockets live in (/run/leash): created 0755 root-owned if missing; refused if it
// exists owned by anyone but root or writable by group or others.
absl::Status EnsureRuntimeDirectory(const std::string& dir);

}  // namespace leash::controlplane
