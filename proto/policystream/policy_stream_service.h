// leashd's half of PolicyStream: holds the versioned UID -> policy map, sends each connected
// sidecar the full map and then deltas, and records the versions each sidecar acked and when
// it last sent a heartbeat. The reconcile publishes through it and waits on acks ("a new
// subject is denied in the watcher before its chain goes in"); the supervisor reads heartbeats.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "leash/v1/policy_stream.grpc.pb.h"

namespace leash::policystream {

// What leashd knows of one sidecar kind.
struct SidecarState {
  bool connected = false;
  uint32_t pid = 0;
  uint64_t sent_version = 0;
  uint64_t acked_version = 0;
  std::string last_ack_error;
  std::vector<uint32_t> failed_uids;
  absl::Time last_heartbeat = absl::InfinitePast();
  leash::v1::Heartbeat heartbeat;
  uint64_t connections = 0;
  // The would-be blocks the earlier processes of this kind reported in their last heartbeats
  // (uid, surface -> count): a heartbeat counts since its process started, and status counts
  // since leashd started.
  std::map<std::pair<uint32_t, int>, uint64_t> earlier_would_be_blocks;
};

class PolicyStreamService final : public leash::v1::PolicyStream::Service {
 public:
  PolicyStreamService() = default;
  ~PolicyStreamService() override;

  // Sets or replaces these subjects in the map (a subject is never removed: one that leaves is
  // published as no_policy) and returns the new version. Connected sidecars get a delta.
  uint64_t Publish(const std::vector<leash::v1::SubjectPolicy>& subjects);

  // The current version (0: nothing published yet).
  uint64_t version() const;

  // Blocks until the sidecar of `kind` has acked `version` or later, or `timeout` passes
  // (DeadlineExceeded naming the sidecar and the versions). An ack carrying an error still
  // counts as acked; its failed UIDs are in State().
  absl::Status WaitForAck(leash::v1::SidecarKind kind, uint64_t version, absl::Duration timeout);

  SidecarState State(leash::v1::SidecarKind kind) const;

  // The would-be blocks sidecars of `kind` have reported since this service started, per
  // subject UID and surface, ordered by both: every earlier process's last heartbeat plus the
  // latest of the one connected now (or last connected). What a process decided after its
  // last heartbeat and before it died is not in it.
  std::vector<leash::v1::WouldBeBlocks> WouldBeBlocks(leash::v1::SidecarKind kind) const;

  // Called (on a stream's reader thread, without the service's lock) when a sidecar's ack
  // names other failed UIDs or another error than its previous one: a respawned proxy that
  // cannot bind a listener any more. leashd runs a reconcile then. Set before serving.
  void SetOnAckChange(std::function<void(leash::v1::SidecarKind)> fn) {
    on_ack_change_ = std::move(fn);
  }

  // Ends every open stream (shutdown), so handler threads return.
  void Shutdown();

  grpc::Status Watch(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<leash::v1::PolicyUpdate, leash::v1::SidecarMessage>* stream)
      override;

 private:
  std::function<void(leash::v1::SidecarKind)> on_ack_change_;
  struct Entry {
    leash::v1::SubjectPolicy policy;
    uint64_t changed_version = 0;
  };
  // The update taking a sidecar from `from_version` to the current one (full when from is 0).
  leash::v1::PolicyUpdate UpdateSince(uint64_t from_version) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint32_t, Entry> subjects_ ABSL_GUARDED_BY(mu_);
  std::map<int, SidecarState> sidecars_ ABSL_GUARDED_BY(mu_);
  // Bumped per connection so a stale stream of a replaced sidecar cannot overwrite its state.
  std::map<int, uint64_t> generation_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace leash::policystream
