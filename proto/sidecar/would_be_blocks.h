// Would-be blocks, counted where they are decided: each enforcer (leash-proxy, leash-fswatch,
// leashd's tools service) adds one for every block on a surface in audit that it answers
// allow, per subject UID and surface. The decision log and its live feed are not the count:
// either may lose a line, and `leash status` must say exactly how much audit let through.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/repeated_field.h"
#include "leash/v1/decision.pb.h"
#include "leash/v1/policy_stream.pb.h"

namespace leash::sidecar {

class WouldBeBlockCounter {
 public:
  // One more would-be block of subject `uid` on `surface`. Thread-safe; takes a short lock
  // (only a block under audit pays it) and allocates only for a (uid, surface) never seen.
  void Add(uint32_t uid, leash::v1::Surface surface);

  // The count of `uid` on `surface` (0 when none). Thread-safe.
  uint64_t Count(uint32_t uid, leash::v1::Surface surface) const;

  // Every non-zero count, ordered by UID then surface. Thread-safe.
  std::vector<leash::v1::WouldBeBlocks> Snapshot() const;

  // Replaces `out` with Snapshot(): what a heartbeat carries. Thread-safe.
  void Fill(google::protobuf::RepeatedPtrField<leash::v1::WouldBeBlocks>* out) const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::pair<uint32_t, int>, uint64_t> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leash::sidecar
