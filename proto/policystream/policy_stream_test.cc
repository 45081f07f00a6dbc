#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "proto/policystream/policy_stream_service.h"

#include <atomic>
#include "proto/policystream/policy_subscriber.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/fixtures/subprocess.h"
#include "test/fixtures/temp_dir.h"

namespace leash::controlplane {
namespace {

using policystream::PolicySubscriber;
using policystream::SubjectMapPtr;
using policystream::SubscriberOptions;
using leash::testing::WaitFor;

leash::v1::SubjectPolicy WithPolicy(uint32_t uid, const std::string& allow) {
  leash::v1::SubjectPolicy subject;
  subject.set_uid(uid);
  subject.set_account("leash-" + std::to_string(uid));
  subject.set_port(18000 + uid % 1000);
  subject.mutable_policy()->mutable_network()->mutable_allow()->add_entries(allow);
  return subject;
}

leash::v1::SubjectPolicy WithoutPolicy(uint32_t uid, const std::string& fail_mode) {
  leash::v1::SubjectPolicy subject;
  subject.set_uid(uid);
  subject.mutable_no_policy()->set_reason("left discovery");
  subject.mutable_no_policy()->set_fail_mode(fail_mode);
  return subject;
}

class PolicyStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *leash::testing::TempDir::Create("ps");
    socket_ = dir_->Join("ps.sock");
    StartServer();
  }
  void TearDown() override {
    subscriber_.reset();
    StopServer();
  }
  void StartServer() {
    service_ = std::make_unique<policystream::PolicyStreamService>();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void StopServer() {
    if (service_) service_->Shutdown();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
    service_.reset();
  }
  void Subscribe() {
    policystream::SubscriberOptions options;
    options.socket_path = socket_;
    options.kind = leash::v1::SIDECAR_KIND_FSWATCH;
    options.heartbeat_period = absl::Milliseconds(20);
    subscriber_ = std::make_unique<policystream::PolicySubscriber>(
        options,
        [this](policystream::SubjectMapPtr map, uint64_t version) {
          absl::MutexLock lock(&mu_);
          maps_.push_back(map);
          versions_.push_back(version);
          leash::v1::PolicyAck ack;
          if (map->count(13)) {
            ack.set_error("listener for uid 13 would not bind");
            ack.add_failed_uids(13);
          }
          return ack;
        },
        [](leash::v1::Heartbeat& beat) { beat.set_events(42); });
    subscriber_->Start();
  }
  policystream::SubjectMapPtr LastMap() {
    absl::MutexLock lock(&mu_);
    return maps_.empty() ? nullptr : maps_.back();
  }

  std::unique_ptr<leash::testing::TempDir> dir_;
  std::string socket_;
  std::unique_ptr<policystream::PolicyStreamService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<policystream::PolicySubscriber> subscriber_;
  absl::Mutex mu_;
  std::vector<policystream::SubjectMapPtr> maps_;
  std::vector<uint64_t> versions_;
};

TEST_F(PolicyStreamTest, SidecarGetsFullMapThenDeltasAndAcksEach) {
  const uint64_t v1 = service_->Publish({WithPolicy(1001, "github.com"), WithPolicy(1002, "a.com")});
  Subscribe();
  ASSERT_TRUE(subscriber_->WaitForFirstMap(absl::Seconds(10)).ok());
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v1, absl::Seconds(10)).ok());
  policystream::SubjectMapPtr first = LastMap();
  ASSERT_EQ(first->size(), 2u);
  ASSERT_NE(first->at(1001).policy, nullptr);
  EXPECT_TRUE(first->at(1001)
                  .policy->DecideNetwork({"api.github.com", std::nullopt, 443})
                  .allowed());

  // A delta changes one subject; the other keeps its compiled policy object.
  const uint64_t v2 = service_->Publish({WithoutPolicy(1001, "closed")});
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v2, absl::Seconds(10)).ok());
  policystream::SubjectMapPtr second = LastMap();
  ASSERT_EQ(second->size(), 2u);
  EXPECT_EQ(second->at(1001).policy, nullptr);
  EXPECT_EQ(second->at(1001).no_policy_reason, "left discovery");
  EXPECT_EQ(second->at(1001).no_policy_fail_mode, engine::FailMode::kClosed);
  EXPECT_EQ(second->at(1002).policy, first->at(1002).policy);
  EXPECT_EQ(subscriber_->applied_version(), v2);
}

TEST_F(PolicyStreamTest, NoPolicyCarriesTheFloorFailMode) {
  service_->Publish({WithoutPolicy(7, "open")});
  Subscribe();
  ASSERT_TRUE(subscriber_->WaitForFirstMap(absl::Seconds(10)).ok());
  EXPECT_EQ(LastMap()->at(7).no_policy_fail_mode, engine::FailMode::kOpen);
}

TEST_F(PolicyStreamTest, AckErrorsAndHeartbeatsReachTheService) {
  const uint64_t v = service_->Publish({WithPolicy(13, "x.com")});
  Subscribe();
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v, absl::Seconds(10)).ok());
  policystream::SidecarState state = service_->State(leash::v1::SIDECAR_KIND_FSWATCH);
  EXPECT_TRUE(state.connected);
  EXPECT_EQ(state.failed_uids, std::vector<uint32_t>{13});
  EXPECT_THAT(state.last_ack_error, ::testing::HasSubstr("would not bind"));
  ASSERT_TRUE(WaitFor(
      [&] { return service_->State(leash::v1::SIDECAR_KIND_FSWATCH).heartbeat.events() == 42; },
      absl::Seconds(10)));
}

// An ack naming other failed UIDs than the last one (a respawned proxy that cannot bind a port
// any more) is told to leashd, which reconciles; the same failure acked again is not.
TEST_F(PolicyStreamTest, AnAckThatChangesTheFailedUidsIsReported) {
  std::atomic<int> changes{0};
  service_->SetOnAckChange([&](leash::v1::SidecarKind kind) {
    if (kind == leash::v1::SIDECAR_KIND_FSWATCH) ++changes;
  });
  const uint64_t v1 = service_->Publish({WithPolicy(13, "x.com")});
  Subscribe();
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v1, absl::Seconds(10)).ok());
  ASSERT_TRUE(WaitFor([&] { return changes.load() == 1; }, absl::Seconds(10)));
  const uint64_t v2 = service_->Publish({WithPolicy(14, "y.com")});
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v2, absl::Seconds(10)).ok());
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(changes.load(), 1);  // still uid 13 failing: nothing new to reconcile
}

TEST_F(PolicyStreamTest, WaitForAckTimesOutNamingTheSidecar) {
  const uint64_t v = service_->Publish({WithPolicy(1, "x.com")});
  absl::Status status =
      service_->WaitForAck(leash::v1::SIDECAR_KIND_PROXY, v, absl::Milliseconds(50));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("SIDECAR_KIND_PROXY"));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("not connected"));
}

TEST_F(PolicyStreamTest, SidecarKeepsItsMapWhileLeashdIsGoneAndResyncsAfter) {
  service_->Publish({WithPolicy(1001, "github.com")});
  Subscribe();
  ASSERT_TRUE(subscriber_->WaitForFirstMap(absl::Seconds(10)).ok());
  policystream::SubjectMapPtr before = LastMap();
  StopServer();
  // The sidecar still holds the last map it put in force.
  EXPECT_EQ(LastMap(), before);
  StartServer();
  const uint64_t v = service_->Publish({WithPolicy(1001, "gitlab.com")});
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v, absl::Seconds(15)).ok());
  EXPECT_TRUE(
      LastMap()->at(1001).policy->DecideNetwork({"gitlab.com", std::nullopt, 443}).allowed());
  EXPECT_GE(service_->State(leash::v1::SIDECAR_KIND_FSWATCH).connections, 1u);
}

TEST_F(PolicyStreamTest, ARespawnedSidecarHasNothingAckedUntilItAcks) {
  const uint64_t v = service_->Publish({WithPolicy(1001, "github.com")});
  Subscribe();
  ASSERT_TRUE(service_->WaitForAck(leash::v1::SIDECAR_KIND_FSWATCH, v, absl::Seconds(10)).ok());
  // A new process of the same kind says hello with nothing in force: the dead one's acks do
  // not count for it.
  auto stub = leash::v1::PolicyStream::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->Watch(&context);
  leash::v1::SidecarMessage hello;
  hello.mutable_hello()->set_kind(leash::v1::SIDECAR_KIND_FSWATCH);
  hello.mutable_hello()->set_pid(4242);
  ASSERT_TRUE(stream->Write(hello));
  leash::v1::PolicyUpdate update;
  ASSERT_TRUE(stream->Read(&update));  // the full map, not yet acked
  EXPECT_EQ(service_->State(leash::v1::SIDECAR_KIND_FSWATCH).pid, 4242u);
  EXPECT_EQ(service_->State(leash::v1::SIDECAR_KIND_FSWATCH).acked_version, 0u);
  context.TryCancel();
}

// One sidecar process on a raw stream: says hello under `pid`, takes the map, and sends
// heartbeats carrying what it counted.
class RawSidecar {
 public:
  RawSidecar(const std::string& socket, uint32_t pid)
      : stub_(leash::v1::PolicyStream::NewStub(
            grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()))),
        stream_(stub_->Watch(&context_)) {
    leash::v1::SidecarMessage hello;
    hello.mutable_hello()->set_kind(leash::v1::SIDECAR_KIND_FSWATCH);
    hello.mutable_hello()->set_pid(pid);
    EXPECT_TRUE(stream_->Write(hello));
    leash::v1::PolicyUpdate update;
    EXPECT_TRUE(stream_->Read(&update));
  }
  ~RawSidecar() { context_.TryCancel(); }

  // A heartbeat whose counts are {uid, surface, count} each.
  void Beat(const std::vector<std::tuple<uint32_t, leash::v1::Surface, uint64_t>>& counts) {
    leash::v1::SidecarMessage beat;
    beat.mutable_heartbeat()->set_sequence(++sequence_);
    for (const auto& [uid, surface, count] : counts) {
      leash::v1::WouldBeBlocks* entry = beat.mutable_heartbeat()->add_would_be_blocks();
      entry->set_uid(uid);
      entry->set_surface(surface);
      entry->set_count(count);
    }
    EXPECT_TRUE(stream_->Write(beat));
  }

 private:
  std::unique_ptr<leash::v1::PolicyStream::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<leash::v1::SidecarMessage, leash::v1::PolicyUpdate>>
      stream_;
  uint64_t sequence_ = 0;
};

// "uid/surface:count ..." of what the service holds for a kind.
std::string WouldBeBlocksOf(const policystream::PolicyStreamService& service, leash::v1::SidecarKind kind) {
  std::string out;
  for (const leash::v1::WouldBeBlocks& count : service.WouldBeBlocks(kind)) {
    out += std::to_string(count.uid()) + "/" + leash::v1::Surface_Name(count.surface()) + ":" +
           std::to_string(count.count()) + " ";
  }
  return out;
}

// A heartbeat's would-be blocks count since its process started, and status counts them since
// leashd started: a respawned sidecar's counts are added to its predecessor's last ones, and a
// process that reconnects is not counted twice.
TEST_F(PolicyStreamTest, WouldBeBlocksAddUpAcrossSidecarProcessesAndNotAcrossReconnects) {
  using leash::v1::SURFACE_COMMANDS;
  using leash::v1::SURFACE_FILESYSTEM;
  service_->Publish({WithPolicy(1001, "github.com")});
  auto holds = [&](const std::string& expected) {
    const bool held = WaitFor(
        [&] {
          return WouldBeBlocksOf(*service_, leash::v1::SIDECAR_KIND_FSWATCH) == expected;
        },
        absl::Seconds(10));
    EXPECT_TRUE(held) << "expected \"" << expected << "\", holds \""
                      << WouldBeBlocksOf(*service_, leash::v1::SIDECAR_KIND_FSWATCH) << "\"";
  };
  {
    RawSidecar first(socket_, 4241);
    first.Beat({{1001, SURFACE_FILESYSTEM, 3}, {1001, SURFACE_COMMANDS, 1}});
    holds("1001/SURFACE_FILESYSTEM:3 1001/SURFACE_COMMANDS:1 ");
    first.Beat({{1001, SURFACE_FILESYSTEM, 5}, {1001, SURFACE_COMMANDS, 1}});
    holds("1001/SURFACE_FILESYSTEM:5 1001/SURFACE_COMMANDS:1 ");
  }
  {
    RawSidecar reconnected(socket_, 4241);
    reconnected.Beat({{1001, SURFACE_FILESYSTEM, 6}, {1001, SURFACE_COMMANDS, 1}});
    holds("1001/SURFACE_FILESYSTEM:6 1001/SURFACE_COMMANDS:1 ");
  }
  {
    RawSidecar respawned(socket_, 4242);
    holds("1001/SURFACE_FILESYSTEM:6 1001/SURFACE_COMMANDS:1 ");
    respawned.Beat({{1001, SURFACE_FILESYSTEM, 2}, {1002, SURFACE_FILESYSTEM, 1}});
    holds("1001/SURFACE_FILESYSTEM:8 1001/SURFACE_COMMANDS:1 1002/SURFACE_FILESYSTEM:1 ");
  }
  EXPECT_TRUE(service_->WouldBeBlocks(leash::v1::SIDECAR_KIND_PROXY).empty());
}

TEST_F(PolicyStreamTest, UnreachableLeashdIsReportedByWaitForFirstMap) {
  StopServer();
  Subscribe();
  absl::Status status = subscriber_->WaitForFirstMap(absl::Milliseconds(500));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(socket_));
}

}  // namespace
}  // namespace leash::controlplane
