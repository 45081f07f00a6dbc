// Decision-to-subscriber latency of the live stream, through the real path: a sidecar's
// AsyncDecisionLog (log file write, then its datagram feed), leashd's DecisionFeed and
// DecisionHub, and a WatchDecisions subscriber. Each record carries the time it was handed to
// the log (in its reason); the subscriber takes the difference when the record reaches it.
//
// The subscriber, by default, is what `leash logs --follow` is: a client stream
// leash.v1.Control/WatchDecisions with the CLI's own Client (its channel and generated stub)
// and LogsRequest's request for `--follow`, over a Unix socket served as leashd serves its admin
// socket: a UnixGrpcServer carrying the real ControlService. Only the service's decision-stream
// dependencies are given (the hub, the log file, account names, as leashd wires them);
// WatchDecisions reads nothing else, so the others are left null rather than faked.
// With --in-process the subscriber calls ServeWatchDecisions (the code the service's handler
// runs) directly, without the gRPC hop, for comparison in the same run.
//
//   bazel run -c opt //test/leashd:decision_stream_latency -- [--in-process] [rate_per_second] [seconds]
//
// Prints, for each rate (default: 1,000 and 10,000 a second, 5 s), p50/p99/max in
// microseconds, each line starting with the path measured.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/logs_render.h"
#include "controlplane/control_service.h"
#include "controlplane/decision_feed.h"
#include "controlplane/decision_hub.h"
#include "controlplane/unix_grpc_server.h"
#include "controlplane/watch_decisions.h"
#include "proto/sidecar/decision_log.h"
#include "test/fixtures/sample_stats.h"

namespace leash::controlplane {
namespace {

using OnEvent = std::function<void(const leash::v1::WatchDecisionsEvent&)>;

// A subscriber running in its own thread until Stop.
class Subscriber {
 public:
  virtual ~Subscriber() = default;
  virtual void Stop() = 0;
};

// ServeWatchDecisions called in-process: the service's handler without gRPC.
class InProcessSubscriber : public Subscriber {
 public:
  InProcessSubscriber(const leash::v1::WatchDecisionsRequest& request,
                      const WatchDecisionsDeps& deps, OnEvent on_event)
      : thread_([this, request, deps, on_event] {
          ServeWatchDecisions(
              request, deps, [this] { return stop_.load(); },
              [&on_event](const leash::v1::WatchDecisionsEvent& event) {
                on_event(event);
                return true;
              })
              .IgnoreError();
        }) {}
  ~InProcessSubscriber() override { Stop(); }
  void Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A `leash logs --follow` client over the admin socket's transport, served by ControlService.
class GrpcSubscriber : public Subscriber {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcSubscriber>> Start(
      const std::string& socket, const leash::v1::WatchDecisionsRequest& request,
      const WatchDecisionsDeps& deps, OnEvent on_event) {
    std::unique_ptr<GrpcSubscriber> out(new GrpcSubscriber(deps));
    UnixSocketOptions options;
    options.name = "admin";
    options.path = socket;
    options.mode = 0600;
    const uid_t self = geteuid();
    options.admit = [self](const ucred& cred) { return cred.uid == self; };
    absl::StatusOr<std::unique_ptr<UnixGrpcServer>> server = UnixGrpcServer::Start(
        options, {&out->service_}, [](grpc::ServerBuilder& builder) {
          builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxAdminRequestBytes));
        });
    if (!server.ok()) return server.status();
    out->server_ = *std::move(server);
    out->client_ = std::make_unique<cli::Client>(socket);
    GrpcSubscriber* raw = out.get();
    out->thread_ = std::thread([raw, request, on_event] {
      std::unique_ptr<grpc::ClientReader<leash::v1::WatchDecisionsEvent>> reader =
          raw->client_->control().WatchDecisions(&raw->context_, request);
      leash::v1::WatchDecisionsEvent event;
      while (reader->Read(&event)) on_event(event);
      const grpc::Status status = reader->Finish();
      if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
        std::fprintf(stderr, "WatchDecisions ended: %s\n", status.error_message().c_str());
      }
    });
    return out;
  }
  ~GrpcSubscriber() override { Stop(); }
  void Stop() override {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
    if (server_ != nullptr) server_->Shutdown();
  }

 private:
  explicit GrpcSubscriber(const WatchDecisionsDeps& deps) : service_(ServiceDeps(deps)) {}
  static ControlDeps ServiceDeps(const WatchDecisionsDeps& decisions) {
    ControlDeps deps;
    deps.decisions = decisions;
    return deps;
  }

  ControlService service_;
  std::unique_ptr<UnixGrpcServer> server_;
  std::unique_ptr<cli::Client> client_;
  grpc::ClientContext context_;
  std::thread thread_;
};

// The request `leash logs --follow` sends.
leash::v1::WatchDecisionsRequest FollowRequest() {
  cli::Args args;
  args.words = {"logs"};
  args.follow = true;
  absl::StatusOr<leash::v1::WatchDecisionsRequest> request = cli::LogsRequest(args, absl::Now());
  if (!request.ok()) {
    std::fprintf(stderr, "LogsRequest: %s\n", std::string(request.status().message()).c_str());
    std::exit(1);
  }
  return *request;
}

int Measure(bool in_process, int rate, int seconds) {
  char dir_template[] = "/tmp/leash-stream-latency-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string path = absl::StrCat(dir_template, "/decisions.jsonl");
  const std::string socket = absl::StrCat(dir_template, "/leash.sock");
  // The log file exists before the subscriber replays its tail, as leashd's does.
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return 1;
  DecisionHub hub([](uint32_t) { return std::string("leash-bench"); });
  absl::StatusOr<std::unique_ptr<DecisionFeed>> feed = DecisionFeed::Start(&hub);
  if (!feed.ok()) return 1;
  WatchDecisionsDeps deps;
  deps.hub = &hub;
  deps.log_path = path;
  deps.account_of = [&hub](uint32_t uid) { return hub.AccountOf(uid); };
  std::mutex mu;
  std::vector<double> micros;
  uint64_t dropped = 0;
  absl::Notification subscribed;
  OnEvent on_event = [&](const leash::v1::WatchDecisionsEvent& event) {
    const int64_t now = absl::GetCurrentTimeNanos();
    if (event.live() && !subscribed.HasBeenNotified()) subscribed.Notify();
    std::lock_guard<std::mutex> lock(mu);
    dropped += event.dropped();
    int64_t sent = 0;
    if (!event.line().empty() && absl::SimpleAtoi(event.record().reason(), &sent)) {
      micros.push_back(static_cast<double>(now - sent) / 1000.0);
    }
  };
  std::unique_ptr<Subscriber> subscriber;
  if (in_process) {
    subscriber = std::make_unique<InProcessSubscriber>(FollowRequest(), deps, on_event);
  } else {
    absl::StatusOr<std::unique_ptr<GrpcSubscriber>> started =
        GrpcSubscriber::Start(socket, FollowRequest(), deps, on_event);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", std::string(started.status().message()).c_str());
      return 1;
    }
    subscriber = *std::move(started);
  }
  // A subscriber whose call failed never reaches the live mark (the gRPC one says why).
  if (!subscribed.WaitForNotificationWithTimeout(absl::Seconds(10))) {
    std::fprintf(stderr, "the subscriber did not reach the live stream in 10 s\n");
    return 1;
  }
  auto log = std::make_unique<sidecar::AsyncDecisionLog>(fd);
  absl::StatusOr<int> end = (*feed)->NewWriterEnd();
  if (!end.ok()) return 1;
  log->AttachFeed(*end);
  const absl::Time start = absl::Now();
  int n = 0;
  for (int ms = 0; ms < seconds * 1000; ++ms) {
    const int due = static_cast<int>(int64_t{ms + 1} * rate / 1000);
    while (n < due) {
      leash::v1::DecisionRecord record;
      record.set_ts(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()));
      record.set_ref(absl::StrCat("b", n++));
      record.set_uid(3000);
      record.set_surface("network");
      record.set_action("block");
      record.set_reason(absl::StrCat(absl::GetCurrentTimeNanos()));
      log->Record(std::move(record));
    }
    const absl::Time next = start + absl::Milliseconds(ms + 1);
    if (absl::Now() < next) absl::SleepFor(next - absl::Now());
  }
  log->Flush();
  absl::SleepFor(absl::Milliseconds(500));
  subscriber->Stop();
  const uint64_t lost = log->lost(), feed_dropped = log->feed_dropped();
  log.reset();
  unlink(path.c_str());
  rmdir(dir_template);
  std::lock_guard<std::mutex> lock(mu);
  std::printf("%s: rate %d/s for %d s: %zu of %d received; p50 %.0f us, p99 %.0f us, "
              "max %.0f us (log lost %llu, feed dropped %llu, watcher dropped %llu)\n",
              in_process ? "in-process" : "grpc", rate, seconds, micros.size(), n,
              leash::testing::Percentile(micros, 0.50), leash::testing::Percentile(micros, 0.99),
              leash::testing::Percentile(micros, 1.0), static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(feed_dropped),
              static_cast<unsigned long long>(dropped));
  return 0;
}

}  // namespace
}  // namespace leash::controlplane

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "usage: decision_stream_latency [--in-process] [rate_per_second] [seconds]\n";
  bool in_process = false;
  std::vector<const char*> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--in-process") == 0) {
      in_process = true;
    } else {
      positional.push_back(argv[i]);
    }
  }
  int seconds = 5;
  std::vector<int> rates = {1000, 10000};
  if (!positional.empty()) {
    int rate = 0;
    if (!absl::SimpleAtoi(positional[0], &rate) || rate <= 0) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    rates = {rate};
  }
  if (positional.size() > 1 && (!absl::SimpleAtoi(positional[1], &seconds) || seconds <= 0)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (positional.size() > 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::printf("%s\n",
              in_process
                  ? "in-process: ServeWatchDecisions called directly, no gRPC hop"
                  : "grpc: a leash.v1.Control/WatchDecisions client stream (leash logs "
                    "--follow's Client and request) over a Unix socket, ControlService on a "
                    "UnixGrpcServer");
  for (int rate : rates) {
    if (leash::controlplane::Measure(in_process, rate, seconds) != 0) return 1;
  }
  return 0;
}
