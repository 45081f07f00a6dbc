#include "fswatch/map_feed.h"

namespace leash::fswatch {
namespace {
StreamFeedFactory g_stream_feed = nullptr;
}  // namespace

void RegisterStreamFeed(StreamFeedFactory factory) { g_stream_feed = factory; }
StreamFeedFactory RegisteredStreamFeed() { return g_stream_feed; }

}  // namespace leash::fswatch
