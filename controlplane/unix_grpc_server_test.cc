#include "base/read_file.h"
#include "controlplane/unix_grpc_server.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "leash/v1/control.grpc.pb.h"
#include "test/fixtures/root.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"
#include "test/fixtures/test_account.h"
#include "test/grpc/reflection_client.h"

namespace leash::controlplane {
namespace {

using ::testing::HasSubstr;

// Answers GetStatus with the caller's credentials as the server saw them.
class EchoPeer final : public leash::v1::Control::Service {
 public:
  UnixGrpcServer* server = nullptr;
  grpc::Status GetStatus(grpc::ServerContext* context, const leash::v1::StatusRequest*,
                         leash::v1::StatusResponse* response) override {
    std::optional<ucred> peer = server->PeerOf(*context);
    if (!peer) return grpc::Status(grpc::StatusCode::INTERNAL, "no peer credentials");
    response->set_uid(peer->uid);
    response->set_user(std::to_string(peer->pid));
    return grpc::Status::OK;
  }
};

class UnixGrpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = *leash::testing::TempDir::Create("ugs"); }
  absl::StatusOr<std::unique_ptr<UnixGrpcServer>> StartRootOnly(const std::string& name) {
    UnixSocketOptions options;
    options.name = "admin";
    options.path = dir_->Join(name);
    options.mode = 0600;
    options.admit = [](const ucred& cred) { return cred.uid == 0; };
    auto server = UnixGrpcServer::Start(options, {&service_});
    if (server.ok()) service_.server = server->get();
    return server;
  }
  std::unique_ptr<leash::testing::TempDir> dir_;
  EchoPeer service_;
};

TEST_F(UnixGrpcServerTest, CallsCarryThePeerCredentialsOfTheirConnection) {
  auto server = StartRootOnly("a.sock");
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = leash::v1::Control::NewStub(
      grpc::CreateChannel("unix:" + dir_->Join("a.sock"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  leash::v1::StatusResponse response;
  grpc::Status status = stub->GetStatus(&context, {}, &response);
  if (geteuid() != 0) {
    // A non-root developer is refused by this root-only socket: that is the rule at work.
    EXPECT_FALSE(status.ok());
    return;
  }
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.uid(), 0u);
  EXPECT_EQ(response.user(), std::to_string(getpid()));
}

TEST_F(UnixGrpcServerTest, SocketFileHasTheRequestedMode) {
  auto server = StartRootOnly("m.sock");
  ASSERT_TRUE(server.ok());
  struct stat st;
  ASSERT_EQ(stat(dir_->Join("m.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  (*server)->Shutdown();
  EXPECT_NE(stat(dir_->Join("m.sock").c_str(), &st), 0) << "socket file left behind";
}

TEST_F(UnixGrpcServerTest, AbstractNamespaceSocketIsRefused) {
  UnixSocketOptions options;
  options.name = "admin";
  options.path = "@leash";
  options.admit = [](const ucred&) { return true; };
  auto server = UnixGrpcServer::Start(options, {&service_});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("abstract-namespace"));
}

TEST_F(UnixGrpcServerTest, AFileThatIsNotASocketIsNeverReplaced) {
  std::ofstream(dir_->Join("f.sock")) << "precious";
  auto server = StartRootOnly("f.sock");
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("is not a socket"));
  std::ifstream in(dir_->Join("f.sock"));
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

TEST_F(UnixGrpcServerTest, ReflectionListsTheServices) {
  LEASH_REQUIRE_ROOT();  // the socket admits root only
  auto server = StartRootOnly("r.sock");
  ASSERT_TRUE(server.ok());
  auto services = leash::testing::ListServicesByReflection(dir_->Join("r.sock"));
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, ::testing::Contains("leash.v1.Control"));
  EXPECT_THAT(*services, ::testing::Contains("grpc.reflection.v1alpha.ServerReflection"));
}

TEST_F(UnixGrpcServerTest, NonRootClientIsRefusedAndLogged) {
  LEASH_REQUIRE_ROOT();
  auto account = leash::testing::TestAccount::Create("lugs-probe");
  ASSERT_TRUE(account.ok()) << account.status();
  // The socket's directory and file must be reachable for the refusal to come from the
  // peer-credential check rather than from file permissions.
  ASSERT_EQ(chmod(dir_->path().c_str(), 0755), 0);
  UnixSocketOptions options;
  options.name = "admin";
  options.path = dir_->Join("p.sock");
  options.mode = 0666;
  options.admit = [](const ucred& cred) { return cred.uid == 0; };
  auto server = UnixGrpcServer::Start(options, {&service_});
  ASSERT_TRUE(server.ok());
  service_.server = server->get();
  const std::string probe = "controlplane/testing/admin_probe";
  auto refused = leash::testing::Run((*account)->AsUser({probe, dir_->Join("p.sock")}));
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_code, 1) << refused->out;
  EXPECT_GE((*server)->refused(), 1u);
  auto admitted = leash::testing::Run({probe, dir_->Join("p.sock")});
  ASSERT_TRUE(admitted.ok());
  EXPECT_EQ(admitted->exit_code, 0) << admitted->out;
}

// One account of a shared socket cannot hold every connection: past its limit its connections
// are closed unread; another account, and root, are not counted against it; and what an
// account held is given back when it closes.
TEST_F(UnixGrpcServerTest, AnAccountHoldsNoMoreConnectionsThanItsLimit) {
  LEASH_REQUIRE_ROOT();
  auto first = leash::testing::TestAccount::Create("lugs-first");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = leash::testing::TestAccount::Create("lugs-second");
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(chmod(dir_->path().c_str(), 0755), 0);
  UnixSocketOptions options;
  options.name = "tools";
  options.path = dir_->Join("t.sock");
  options.mode = 0666;
  options.admit = [](const ucred&) { return true; };
  options.max_connections_per_uid = 2;
  auto server = UnixGrpcServer::Start(options, {&service_});
  ASSERT_TRUE(server.ok());
  service_.server = server->get();
  const std::string holder = "controlplane/testing/connection_holder";
  const std::string socket = dir_->Join("t.sock");

  auto over = leash::testing::Run((*first)->AsUser({holder, socket, "5"}));
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->out, "kept=2 closed=3\n");
  EXPECT_EQ((*server)->refused(), 3u);

  // The first account holds its two; the second is not counted against it. (First, until gRPC
  // has closed the previous run's connections, the account may still hold them.)
  ASSERT_TRUE(leash::testing::WaitFor(
      [&] {
        auto probe = leash::testing::Run((*first)->AsUser({holder, socket, "2"}));
        return probe.ok() && probe->out == "kept=2 closed=0\n";
      },
      absl::Seconds(10)));
  const std::string held_log = dir_->Join("held.out");
  auto held = leash::testing::Background::Start(
      (*first)->AsUser({holder, socket, "2", "--hold-ms=20000"}), held_log);
  ASSERT_TRUE(held.ok());
  auto held_out = [&] { return base::ReadFile(held_log).value_or(""); };
  ASSERT_TRUE(leash::testing::WaitFor([&] { return !held_out().empty(); }, absl::Seconds(10)));
  EXPECT_EQ(held_out(), "kept=2 closed=0\n");
  auto other = leash::testing::Run((*second)->AsUser({holder, socket, "2"}));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->out, "kept=2 closed=0\n");
  auto root = leash::testing::Run({holder, socket, "5"});
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->out, "kept=5 closed=0\n") << "root acts for every account";
  auto while_held = leash::testing::Run((*first)->AsUser({holder, socket, "1"}));
  ASSERT_TRUE(while_held.ok());
  EXPECT_EQ(while_held->out, "kept=0 closed=1\n");

  // Closed connections are given back.
  held->Signal(SIGKILL);
  ASSERT_TRUE(held->Wait(absl::Seconds(10)).ok());
  EXPECT_TRUE(leash::testing::WaitFor(
      [&] {
        auto again = leash::testing::Run((*first)->AsUser({holder, socket, "2"}));
        return again.ok() && again->out == "kept=2 closed=0\n";
      },
      absl::Seconds(10)));
}

// The relayed socket (the tools socket's shape): at most 2 calls before the caller
// acknowledges the server's SETTINGS, which say 2 calls per connection.
class RelayedSocketTest : public UnixGrpcServerTest {
 protected:
  void SetUp() override {
    UnixGrpcServerTest::SetUp();
    UnixSocketOptions options;
    options.name = "tools";
    options.path = dir_->Join("r.sock");
    options.mode = 0600;
    options.admit = [](const ucred&) { return true; };
    options.max_streams_before_settings_ack = 2;
    options.on_relay_cut = [this](const ucred& cred, const std::string& why) {
      cut_uid_ = static_cast<int64_t>(cred.uid);
      absl::MutexLock lock(&mu_);
      cut_why_ = why;
    };
    auto server = UnixGrpcServer::Start(options, {&service_}, [](grpc::ServerBuilder& builder) {
      builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 2);
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    service_.server = server_.get();
    baseline_fds_ = OpenDescriptors();
  }
  static int OpenDescriptors() {
    int count = 0;
    DIR* dir = opendir("/proc/self/fd");
    while (dir != nullptr && readdir(dir) != nullptr) ++count;
    if (dir != nullptr) closedir(dir);
    return count;
  }
  int Connect() {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, server_->path().c_str(), sizeof(address.sun_path) - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    return fd;
  }
  // Whether the server has closed `fd`'s connection (EOF or reset), reading what it sent.
  static bool ClosedByServer(int fd) {
    char buffer[4096];
    while (true) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) != 1) return false;
      const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
      if (n < 0) return false;
    }
  }
  static std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, size_t length) {
    std::string out = {static_cast<char>(length >> 16), static_cast<char>(length >> 8),
                       static_cast<char>(length),       static_cast<char>(type),
                       static_cast<char>(flags),        static_cast<char>(stream >> 24),
                       static_cast<char>(stream >> 16), static_cast<char>(stream >> 8),
                       static_cast<char>(stream)};
    return out + std::string(length, '\0');
  }
  std::string CutWhy() {
    absl::MutexLock lock(&mu_);
    return cut_why_;
  }
  std::unique_ptr<UnixGrpcServer> server_;
  std::atomic<int64_t> cut_uid_{-1};
  absl::Mutex mu_;
  std::string cut_why_ ABSL_GUARDED_BY(mu_);
  int baseline_fds_ = 0;
};

// A caller that opens more calls than the limit without acknowledging the server's SETTINGS
// has the connection cut once the relay's buffer is full of what it holds back, told through
// on_relay_cut; no descriptor is left behind.
TEST_F(RelayedSocketTest, ACallerOpeningMoreCallsThanTheLimitBeforeAcknowledgingIsCut) {
  LEASH_REQUIRE_ROOT();
  const int fd = Connect();
  std::string bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + Frame(0x4, 0, 0, 0);
  for (uint32_t stream = 1; stream <= 5; stream += 2) bytes += Frame(0x1, 0x4, stream, 0);
  // Filler on the third stream, more than the relay holds.
  bytes += Frame(0x0, 0, 5, 32 * 1024);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  EXPECT_TRUE(leash::testing::WaitFor([&] { return ClosedByServer(fd); }, absl::Seconds(10)));
  EXPECT_TRUE(leash::testing::WaitFor([&] { return cut_uid_.load() == 0; }, absl::Seconds(10)));
  EXPECT_THAT(CutWhy(), HasSubstr("without acknowledging"));
  close(fd);
  EXPECT_TRUE(leash::testing::WaitFor([&] { return OpenDescriptors() == baseline_fds_; },
                                      absl::Seconds(10)))
      << OpenDescriptors() << " descriptors open, " << baseline_fds_ << " before";
}

// Bytes that are not an HTTP/2 client's are refused at once.
TEST_F(RelayedSocketTest, AConnectionWithoutTheHttp2PrefaceIsCut) {
  LEASH_REQUIRE_ROOT();
  const int fd = Connect();
  const std::string bytes = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  EXPECT_TRUE(leash::testing::WaitFor([&] { return ClosedByServer(fd); }, absl::Seconds(10)));
  EXPECT_TRUE(leash::testing::WaitFor([&] { return !CutWhy().empty(); }, absl::Seconds(10)));
  EXPECT_THAT(CutWhy(), HasSubstr("preface"));
  close(fd);
}

// A gRPC client that fires many calls at once on a new channel is not cut: it acknowledges the
// server's SETTINGS as soon as it reads them, before its calls go out past the limit.
TEST_F(RelayedSocketTest, AGrpcClientFiringManyCallsAtOnceIsAnsweredAndNotCut) {
  LEASH_REQUIRE_ROOT();
  for (int round = 0; round < 5; ++round) {
    auto stub = leash::v1::Control::NewStub(
        grpc::CreateChannel("unix:" + server_->path(), grpc::InsecureChannelCredentials()));
    std::atomic<int> answered{0};
    std::vector<std::thread> callers;
    for (int i = 0; i < 40; ++i) {
      callers.emplace_back([&] {
        grpc::ClientContext context;
        leash::v1::StatusResponse response;
        if (stub->GetStatus(&context, {}, &response).ok() && response.uid() == 0) ++answered;
      });
    }
    for (std::thread& caller : callers) caller.join();
    EXPECT_EQ(answered.load(), 40) << "round " << round;
  }
  EXPECT_EQ(cut_uid_.load(), -1) << CutWhy();
}

// CutConnectionsOf shuts gRPC's end of the pair; the relay then closes the caller's socket, and
// every descriptor of the connection is released. Shutdown closes what is still open.
TEST_F(RelayedSocketTest, CuttingAConnectionClosesTheCallersSocketAndLeavesNoDescriptor) {
  LEASH_REQUIRE_ROOT();
  const int fd = Connect();
  const std::string start = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + Frame(0x4, 0, 0, 0);
  ASSERT_EQ(send(fd, start.data(), start.size(), MSG_NOSIGNAL), static_cast<ssize_t>(start.size()));
  ASSERT_TRUE(leash::testing::WaitFor([&] { return server_->CutConnectionsOf(0) >= 1; },
                                      absl::Seconds(10)));
  EXPECT_TRUE(leash::testing::WaitFor([&] { return ClosedByServer(fd); }, absl::Seconds(10)));
  close(fd);
  EXPECT_EQ(cut_uid_.load(), -1) << "a cut by the service is not the relay's";
  EXPECT_TRUE(leash::testing::WaitFor([&] { return OpenDescriptors() == baseline_fds_; },
                                      absl::Seconds(10)))
      << OpenDescriptors() << " descriptors open, " << baseline_fds_ << " before";
  // A connection still open at shutdown is closed with the server.
  const int open_fd = Connect();
  ASSERT_EQ(send(open_fd, start.data(), start.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(start.size()));
  server_->Shutdown(absl::Seconds(1));
  EXPECT_TRUE(leash::testing::WaitFor([&] { return ClosedByServer(open_fd); }, absl::Seconds(10)));
  close(open_fd);
}

TEST(EnsureRuntimeDirectory, RefusesAGroupWritableDirectory) {
  LEASH_REQUIRE_ROOT();
  auto dir = *leash::testing::TempDir::Create("rund");
  ASSERT_EQ(chmod(dir->path().c_str(), 0775), 0);
  absl::Status status = EnsureRuntimeDirectory(dir->path());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("chmod 0755"));
  ASSERT_EQ(chmod(dir->path().c_str(), 0755), 0);
  EXPECT_TRUE(EnsureRuntimeDirectory(dir->path()).ok());
}

}  // namespace
}  // namespace leash::controlplane
