// Where the watcher's maps come from: leashd over PolicyStream (stream_feed.cc, which wraps
// leash::sidecar::PolicySubscriber), or a file given with the test-only --initial-map.
//
// The stream feed registers itself when its library is linked into the binary. Until the
// PolicySubscriber implementation is in the tree, //fswatch:leash-fswatch links without it and
// refuses to start without --initial-map, saying so; //fswatch:stream_feed compiles against
// the subscriber's header all along.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controlplane/sidecar_api/policy_subscriber.h"

namespace leash::fswatch {

class MapFeed {
 public:
  virtual ~MapFeed() = default;
  // Starts delivering maps to the apply function and waits up to `timeout` for the first one
  // to be in force.
  virtual absl::Status Start(absl::Duration timeout) = 0;
  virtual void Stop() = 0;
};

using StreamFeedFactory = std::unique_ptr<MapFeed> (*)(const std::string& socket_path,
                                                       sidecar::PolicySubscriber::ApplyFn apply,
                                                       sidecar::PolicySubscriber::StatsFn stats);

// Called once by stream_feed.cc's static initializer.
void RegisterStreamFeed(StreamFeedFactory factory);
// Null when the stream feed is not linked in.
StreamFeedFactory RegisteredStreamFeed();

}  // namespace leash::fswatch
