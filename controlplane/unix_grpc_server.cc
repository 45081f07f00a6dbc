#include "controlplane/unix_grpc_server.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/server_posix.h"

namespace leash::controlplane {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(what, " ", path));
}

// gRPC names a channel made from descriptor N "fd:N".
std::string PeerKey(int fd) { return absl::StrCat("fd:", fd); }

}  // namespace

absl::Status EnsureRuntimeDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir", dir);
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return Errno("stat", dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  if (st.st_uid != 0 || (st.st_mode & 022) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " must be owned by root and writable by root only (it holds the admin socket); "
             "fix it with: chown root:root ", dir, " && chmod 0755 ", dir));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<UnixGrpcServer>> UnixGrpcServer::Start(
    UnixSocketOptions options, const std::vector<grpc::Service*>& services,
    const std::function<void(grpc::ServerBuilder&)>& configure) {
  const std::string& path = options.path;
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", options.name, " socket '", path,
        "' must be an absolute filesystem path; abstract-namespace sockets are refused because "
        "they carry no file permissions"));
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", path, " is longer than ", sizeof(address.sun_path) - 1,
                     " bytes"));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " exists and is not a socket; refusing to replace it"));
    }
    if (unlink(path.c_str()) != 0) return Errno("unlink stale socket", path);
  }

  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket for", path);
  // Bind under a closed umask so the socket is never reachable before its mode is set.
  const mode_t old_umask = umask(0077);
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  const int bind_errno = errno;
  umask(old_umask);
  if (bound != 0) {
    close(fd);
    errno = bind_errno;
    return Errno("bind", path);
  }
  auto fail = [&](absl::Status status) {
    close(fd);
    unlink(path.c_str());
    return status;
  };
  if (options.group && chown(path.c_str(), 0, *options.group) != 0) return fail(Errno("chown", path));
  if (chmod(path.c_str(), options.mode) != 0) return fail(Errno("chmod", path));
  if (listen(fd, 128) != 0) return fail(Errno("listen", path));
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return fail(Errno("eventfd for", path));

  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (configure) configure(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    close(wake);
    return fail(absl::InternalError(absl::StrCat("gRPC server for ", path, " did not start")));
  }
  std::unique_ptr<ConnectionRelay> relay;
  if (options.max_streams_before_settings_ack > 0) {
    ConnectionRelayOptions relay_options;
    relay_options.max_streams_before_ack = options.max_streams_before_settings_ack;
    relay_options.on_cut = options.on_relay_cut;
    absl::StatusOr<std::unique_ptr<ConnectionRelay>> started =
        ConnectionRelay::Start(std::move(relay_options));
    if (!started.ok()) {
      server->Shutdown();
      close(wake);
      return fail(absl::Status(started.status().code(),
                               absl::StrCat(started.status().message(), " (", path, ")")));
    }
    relay = *std::move(started);
  }
  std::unique_ptr<UnixGrpcServer> out(
      new UnixGrpcServer(std::move(options), fd, wake, std::move(server), std::move(relay)));
  out->accept_thread_ = std::thread([raw = out.get()] { raw->AcceptLoop(); });
  return out;
}

UnixGrpcServer::UnixGrpcServer(UnixSocketOptions options, int listen_fd, int wake_fd,
                               std::unique_ptr<grpc::Server> server,
                               std::unique_ptr<ConnectionRelay> relay)
    : options_(std::move(options)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      server_(std::move(server)),
      relay_(std::move(relay)) {}

UnixGrpcServer::~UnixGrpcServer() { Shutdown(); }

void UnixGrpcServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "leashd: %s socket: poll: %s\n", options_.name.c_str(),
                   std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    // gRPC drives the descriptor from its own poller: it must be non-blocking.
    const int accepted = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (accepted < 0) continue;
    int conn = accepted;
    ucred cred{};
    socklen_t length = sizeof(cred);
    const bool known = getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0;
    // Decided and written to stderr outside the lock: `admit` is the caller's code, and a
    // stalled stderr must not hold up PeerOf on every call.
    std::string refusal;
    if (!known) {
      refusal = "peer credentials unreadable";
    } else if (!options_.admit(cred)) {
      refusal = "not permitted on this socket";
    }
    if (refusal.empty() && relay_ != nullptr) {
      // From here on gRPC's end of the relay's pair is the connection leashd records and cuts.
      absl::StatusOr<int> grpc_end = relay_->Add(accepted, cred);
      if (!grpc_end.ok()) {
        std::fprintf(stderr, "leashd: %s socket: %s\n", options_.name.c_str(),
                     std::string(grpc_end.status().message()).c_str());
        continue;
      }
      conn = *grpc_end;
    }
    struct stat st {};
    const bool stated = fstat(conn, &st) == 0;
    const int fstat_errno = errno;
    if (refusal.empty() && !stated) {
      refusal = absl::StrCat("fstat of the connection failed: ", std::strerror(fstat_errno));
    }
    std::string line;
    {
      absl::MutexLock lock(&mu_);
      if (refusal.empty()) refusal = RefusalOf(cred);
      if (refusal.empty()) {
        // In place before gRPC can run a call on the connection, or close it.
        peers_[PeerKey(conn)] = Connection{cred, st.st_dev, st.st_ino};
      } else {
        ++refused_;
        line = RefusalLine(cred, known, refusal);
      }
    }
    if (refusal.empty()) {
      grpc::AddInsecureChannelFromFd(server_.get(), conn);
      continue;
    }
    close(conn);
    if (!line.empty()) std::fputs(line.c_str(), stderr);
  }
}

int UnixGrpcServer::LiveDescriptor(const std::string& key, const Connection& connection) {
  int fd = -1;
  struct stat st {};
  const bool live = absl::SimpleAtoi(absl::string_view(key).substr(3), &fd) &&
                    fstat(fd, &st) == 0 && st.st_dev == connection.dev &&
                    st.st_ino == connection.ino;
  return live ? fd : -1;
}

void UnixGrpcServer::ForgetClosed() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    it = LiveDescriptor(it->first, it->second) >= 0 ? std::next(it) : peers_.erase(it);
  }
}

bool UnixGrpcServer::PeerIsNotReading(const grpc::ServerContextBase& context) const {
  absl::MutexLock lock(&mu_);
  auto it = peers_.find(context.peer());
  if (it == peers_.end()) return false;
  const int fd = LiveDescriptor(it->first, it->second);
  int queued = 0;
  int sndbuf = 0;
  socklen_t length = sizeof(sndbuf);
  if (fd < 0 || ioctl(fd, SIOCOUTQ, &queued) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &length) != 0) {
    return false;
  }
  return queued >= sndbuf / 2;
}

int UnixGrpcServer::CutConnectionsOf(uid_t uid) {
  absl::MutexLock lock(&mu_);
  ForgetClosed();
  int cut = 0;
  for (const auto& [key, connection] : peers_) {
    if (connection.cred.uid != uid) continue;
    const int fd = LiveDescriptor(key, connection);
    if (fd >= 0 && shutdown(fd, SHUT_RDWR) == 0) ++cut;
  }
  return cut;
}

std::string UnixGrpcServer::RefusalOf(const ucred& cred) {
  if (options_.max_connections_per_uid <= 0 || cred.uid == 0) return "";
  ForgetClosed();
  int held = 0;
  for (const auto& [key, connection] : peers_) held += connection.cred.uid == cred.uid ? 1 : 0;
  if (held < options_.max_connections_per_uid) return "";
  return absl::StrCat("uid ", cred.uid, " already holds ", held, " connections to the ",
                      options_.name, " socket, the most one account may (raise it with --",
                      options_.name, "-connections-per-account)");
}

std::string UnixGrpcServer::RefusalLine(const ucred& cred, bool known, const std::string& why) {
  RefusalLog& log = refusal_log_[known ? cred.uid : ~0u];
  const absl::Time now = absl::Now();
  if (now - log.last_written < absl::Seconds(10)) {
    ++log.unwritten;
    return "";
  }
  const std::string unwritten =
      log.unwritten == 0
          ? ""
          : absl::StrCat(" (and ", log.unwritten, " more from this uid in the last ",
                         absl::FormatDuration(now - log.last_written), ", not written)");
  log.last_written = now;
  log.unwritten = 0;
  return absl::StrCat("leashd: refused a connection to the ", options_.name, " socket ",
                      options_.path, " from uid ", known ? cred.uid : ~0u, " (pid ",
                      known ? cred.pid : -1, "): ", why, unwritten, "\n");
}

void UnixGrpcServer::Shutdown(absl::Duration deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
    // Adding 1 to an eventfd only fails on a bad descriptor, which would be a bug here.
    std::fprintf(stderr, "leashd: waking the %s accept loop failed: %s\n", options_.name.c_str(),
                 std::strerror(errno));
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(absl::ToInt64Milliseconds(deadline)));
  // After gRPC, so that in-flight calls' answers still reach their callers.
  if (relay_ != nullptr) relay_->Stop();
  close(listen_fd_);
  close(wake_fd_);
  unlink(options_.path.c_str());
}

std::optional<ucred> UnixGrpcServer::PeerOf(const grpc::ServerContextBase& context) const {
  absl::MutexLock lock(&mu_);
  auto it = peers_.find(context.peer());
  if (it == peers_.end()) return std::nullopt;
  return it->second.cred;
}

uint64_t UnixGrpcServer::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

}  // namespace leash::controlplane
