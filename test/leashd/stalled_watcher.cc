#include "test/leashd/stalled_watcher.h"

#include "absl/time/clock.h"

namespace leash::testing {

absl::StatusOr<std::unique_ptr<StalledWatcher>> StalledWatcher::Start(
    const std::string& admin_socket) {
  std::unique_ptr<StalledWatcher> watcher(new StalledWatcher());
  watcher->channel_ =
      grpc::CreateChannel("unix:" + admin_socket, grpc::InsecureChannelCredentials());
  watcher->stub_ = leash::v1::Control::NewStub(watcher->channel_);
  leash::v1::WatchDecisionsRequest request;
  request.set_follow(true);
  watcher->reader_ = watcher->stub_->WatchDecisions(&watcher->context_, request);
  leash::v1::WatchDecisionsEvent event;
  while (watcher->reader_->Read(&event)) {
    if (event.live()) return watcher;
  }
  const grpc::Status status = watcher->reader_->Finish();
  return absl::UnavailableError("WatchDecisions ended before it was live: " +
                                status.error_message());
}

StalledWatcher::~StalledWatcher() {
  context_.TryCancel();
  if (thread_.joinable()) thread_.join();
  if (reader_ != nullptr) (void)reader_->Finish();
}

void StalledWatcher::Resume() {
  last_read_ns_.store(absl::GetCurrentTimeNanos());
  thread_ = std::thread([this] {
    leash::v1::WatchDecisionsEvent event;
    while (reader_->Read(&event)) {
      if (!event.line().empty()) lines_.fetch_add(1);
      told_dropped_.fetch_add(event.dropped());
      last_read_ns_.store(absl::GetCurrentTimeNanos());
    }
  });
}

int64_t StalledWatcher::quiet_us() const {
  const int64_t last = last_read_ns_.load();
  return last == 0 ? 0 : (absl::GetCurrentTimeNanos() - last) / 1000;
}

}  // namespace leash::testing
