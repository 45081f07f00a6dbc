// The sidecar half of PolicyStream (leash-proxy and leash-fswatch link it; leashd serves the
// other half). A subscriber connects to leashd's admin socket, says hello, receives the full
// UID -> policy map and then deltas, compiles each policy once, hands the sidecar an immutable
// snapshot of the whole map, and acks the version once the sidecar says it is in force. It
// sends a heartbeat on a fixed period so leashd's supervisor can tell a stopped sidecar from a
// quiet one. If leashd goes away, the sidecar keeps the last snapshot it put in force and the
// subscriber reconnects with backoff.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "leash/v1/policy_stream.pb.h"
#include "proto/policystream/subject_map.h"

namespace leash::policystream {

struct SubscriberOptions {
  // leashd's admin socket.
  std::string socket_path = "/run/leash/leash.sock";
  leash::v1::SidecarKind kind = leash::v1::SIDECAR_KIND_UNSPECIFIED;
  absl::Duration heartbeat_period = absl::Seconds(1);
  absl::Duration max_reconnect_backoff = absl::Seconds(2);
};

class PolicySubscriber {
 public:
  // Called on the subscriber's thread with each new complete map and its version. Returns the
  // ack to send: version set, and error/failed_uids for parts that could not be put in force.
  // The snapshot is the sidecar's to keep.
  using ApplyFn = std::function<leash::v1::PolicyAck(policystream::SubjectMapPtr map, uint64_t version)>;
  // Fills the counters of each heartbeat (events answered, records lost, queue overflows).
  using StatsFn = std::function<void(leash::v1::Heartbeat& heartbeat)>;

  PolicySubscriber(SubscriberOptions options, ApplyFn apply, StatsFn stats);
  ~PolicySubscriber();  // Stop()s

  // Starts the subscriber thread. Call once.
  void Start();
  // Stops it and closes the stream. The last map stays with the sidecar.
  void Stop();

  // Blocks until a first full map has been applied and acked, or `timeout` passes
  // (DeadlineExceeded; Unavailable with the last connection error if leashd never answered).
  absl::Status WaitForFirstMap(absl::Duration timeout);

  // The version of the last map applied (0: none).
  uint64_t applied_version() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leash::policystream
