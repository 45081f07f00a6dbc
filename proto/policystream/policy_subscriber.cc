#include "proto/policystream/policy_subscriber.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "leash/v1/policy_stream.grpc.pb.h"

namespace leash::policystream {

class PolicySubscriber::Impl {
 public:
  Impl(SubscriberOptions options, ApplyFn apply, StatsFn stats)
      : options_(std::move(options)), apply_(std::move(apply)), stats_(std::move(stats)) {}

  ~Impl() { Stop(); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    if (thread_.joinable()) thread_.join();
  }

  absl::Status WaitForFirstMap(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return applied_version_ > 0; };
    if (mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) return absl::OkStatus();
    if (!last_error_.empty()) {
      return absl::UnavailableError(
          absl::StrCat("no policy map from leashd at ", options_.socket_path, ": ", last_error_));
    }
    return absl::DeadlineExceededError(absl::StrCat("no policy map from leashd at ",
                                                    options_.socket_path, " within ",
                                                    absl::FormatDuration(timeout)));
  }

  uint64_t applied_version() const {
    absl::MutexLock lock(&mu_);
    return applied_version_;
  }

 private:
  bool Stopping() {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  void Run() {
    absl::Duration backoff = absl::Milliseconds(50);
    while (!Stopping()) {
      const bool got_updates = RunOneStream();
      if (Stopping()) break;
      if (got_updates) backoff = absl::Milliseconds(50);
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), backoff);
      backoff = std::min(backoff * 2, options_.max_reconnect_backoff);
    }
  }

  // One connection: hello, then apply each update and ack it. Returns whether any update
  // arrived (to reset the backoff).
  bool RunOneStream() {
    auto channel = grpc::CreateChannel(absl::StrCat("unix:", options_.socket_path),
                                       grpc::InsecureChannelCredentials());
    auto stub = leash::v1::PolicyStream::NewStub(channel);
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return false;
      context_ = &context;
    }
    auto stream = stub->Watch(&context);
    absl::Mutex write_mu;  // acks and heartbeats share the stream
    leash::v1::SidecarMessage hello;
    hello.mutable_hello()->set_kind(options_.kind);
    hello.mutable_hello()->set_pid(static_cast<uint32_t>(getpid()));
    hello.mutable_hello()->set_in_force_version(applied_version());
    bool open = stream->Write(hello);

    // The heartbeat thread sleeps on `done_mu` so ending the stream wakes it at once.
    absl::Mutex done_mu;
    bool stream_done = false;
    std::thread heartbeat([&] {
      uint64_t sequence = 0;
      while (true) {
        {
          absl::MutexLock lock(&done_mu);
          done_mu.AwaitWithTimeout(absl::Condition(&stream_done), options_.heartbeat_period);
          if (stream_done) break;
        }
        leash::v1::SidecarMessage beat;
        beat.mutable_heartbeat()->set_sequence(++sequence);
        if (stats_) stats_(*beat.mutable_heartbeat());
        absl::MutexLock lock(&write_mu);
        if (!stream->Write(beat)) break;
      }
    });

    bool got_updates = false;
    leash::v1::PolicyUpdate update;
    while (open && stream->Read(&update)) {
      got_updates = true;
      policystream::SubjectMapPtr snapshot = Merge(update);
      leash::v1::PolicyAck ack = apply_(snapshot, update.version());
      ack.set_version(update.version());
      {
        absl::MutexLock lock(&mu_);
        map_ = snapshot;
        applied_version_ = update.version();
        last_error_.clear();
      }
      leash::v1::SidecarMessage message;
      *message.mutable_ack() = std::move(ack);
      absl::MutexLock lock(&write_mu);
      if (!stream->Write(message)) break;
    }
    {
      absl::MutexLock lock(&done_mu);
      stream_done = true;
    }
    context.TryCancel();
    heartbeat.join();
    const grpc::Status status = stream->Finish();
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
    if (!status.ok()) last_error_ = status.error_message();
    return got_updates;
  }

  // The complete map after `update`: a full update replaces the map; a delta replaces the
  // subjects it carries and keeps the compiled policies of the rest.
  policystream::SubjectMapPtr Merge(const leash::v1::PolicyUpdate& update) {
    auto next = std::make_shared<policystream::SubjectMap>();
    if (!update.full()) {
      absl::MutexLock lock(&mu_);
      if (map_ != nullptr) *next = *map_;
    }
    for (const leash::v1::SubjectPolicy& wire : update.subjects()) {
      (*next)[wire.uid()] = policystream::MakeSubjectEntry(wire);
    }
    return next;
  }

  const SubscriberOptions options_;
  const ApplyFn apply_;
  const StatsFn stats_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  policystream::SubjectMapPtr map_ ABSL_GUARDED_BY(mu_);
  uint64_t applied_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
};

PolicySubscriber::PolicySubscriber(SubscriberOptions options, ApplyFn apply, StatsFn stats)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(apply), std::move(stats))) {}

PolicySubscriber::~PolicySubscriber() { Stop(); }

void PolicySubscriber::Start() { impl_->Start(); }
void PolicySubscriber::Stop() { impl_->Stop(); }

absl::Status PolicySubscriber::WaitForFirstMap(absl::Duration timeout) {
  return impl_->WaitForFirstMap(timeout);
}

uint64_t PolicySubscriber::applied_version() const { return impl_->applied_version(); }

}  // namespace leash::policystream
