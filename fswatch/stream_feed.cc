// The PolicyStream feed: leashd's map, delivered by leash::sidecar::PolicySubscriber on its own
// thread. Apply (Watcher::Publish, then the marks) runs there and returns the ack, so a version
// is acked only once it is in force; heartbeats carry the watcher's counters.
#include <memory>
#include <string>

#include "fswatch/map_feed.h"

namespace leash::fswatch {
namespace {

class StreamFeed : public MapFeed {
 public:
  StreamFeed(const std::string& socket_path, sidecar::PolicySubscriber::ApplyFn apply,
             sidecar::PolicySubscriber::StatsFn stats)
      : subscriber_(
            sidecar::SubscriberOptions{socket_path, leash::v1::SIDECAR_KIND_FSWATCH},
            std::move(apply), std::move(stats)) {}

  absl::Status Start(absl::Duration timeout) override {
    subscriber_.Start();
    return subscriber_.WaitForFirstMap(timeout);
  }
  void Stop() override { subscriber_.Stop(); }

 private:
  sidecar::PolicySubscriber subscriber_;
};

std::unique_ptr<MapFeed> MakeStreamFeed(const std::string& socket_path,
                                        sidecar::PolicySubscriber::ApplyFn apply,
                                        sidecar::PolicySubscriber::StatsFn stats) {
  return std::make_unique<StreamFeed>(socket_path, std::move(apply), std::move(stats));
}

const bool kRegistered = [] {
  RegisterStreamFeed(&MakeStreamFeed);
  return true;
}();

}  // namespace
}  // namespace leash::fswatch
