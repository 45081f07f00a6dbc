#include "proto/policystream/policy_stream_service.h"

#include <thread>

#include "absl/strings/str_cat.h"

namespace leash::policystream {

using leash::v1::PolicyUpdate;
using leash::v1::SidecarMessage;

PolicyStreamService::~PolicyStreamService() { Shutdown(); }

uint64_t PolicyStreamService::Publish(const std::vector<leash::v1::SubjectPolicy>& subjects) {
  absl::MutexLock lock(&mu_);
  ++version_;
  for (const leash::v1::SubjectPolicy& subject : subjects) {
    Entry& entry = subjects_[subject.uid()];
    entry.policy = subject;
    entry.changed_version = version_;
  }
  return version_;
}

uint64_t PolicyStreamService::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

PolicyUpdate PolicyStreamService::UpdateSince(uint64_t from_version) const {
  PolicyUpdate update;
  update.set_version(version_);
  update.set_full(from_version == 0);
  for (const auto& [uid, entry] : subjects_) {
    if (from_version == 0 || entry.changed_version > from_version) {
      *update.add_subjects() = entry.policy;
    }
  }
  return update;
}

absl::Status PolicyStreamService::WaitForAck(leash::v1::SidecarKind kind, uint64_t version,
                                             absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto acked = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    auto it = sidecars_.find(kind);
    return shutdown_ || (it != sidecars_.end() && it->second.acked_version >= version);
  };
  if (mu_.AwaitWithTimeout(absl::Condition(&acked), timeout) && !shutdown_) {
    return absl::OkStatus();
  }
  const SidecarState& state = sidecars_[kind];
  return absl::DeadlineExceededError(absl::StrCat(
      leash::v1::SidecarKind_Name(kind), " did not ack map version ", version, " within ",
      absl::FormatDuration(timeout), " (", state.connected ? "connected" : "not connected",
      ", acked ", state.acked_version, ")"));
}

SidecarState PolicyStreamService::State(leash::v1::SidecarKind kind) const {
  absl::MutexLock lock(&mu_);
  auto it = sidecars_.find(kind);
  return it == sidecars_.end() ? SidecarState() : it->second;
}

std::vector<leash::v1::WouldBeBlocks> PolicyStreamService::WouldBeBlocks(
    leash::v1::SidecarKind kind) const {
  std::map<std::pair<uint32_t, int>, uint64_t> totals;
  {
    absl::MutexLock lock(&mu_);
    auto it = sidecars_.find(kind);
    if (it == sidecars_.end()) return {};
    totals = it->second.earlier_would_be_blocks;
    for (const leash::v1::WouldBeBlocks& count : it->second.heartbeat.would_be_blocks()) {
      totals[{count.uid(), count.surface()}] += count.count();
    }
  }
  std::vector<leash::v1::WouldBeBlocks> out;
  out.reserve(totals.size());
  for (const auto& [key, count] : totals) {
    leash::v1::WouldBeBlocks& entry = out.emplace_back();
    entry.set_uid(key.first);
    entry.set_surface(static_cast<leash::v1::Surface>(key.second));
    entry.set_count(count);
  }
  return out;
}

void PolicyStreamService::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

grpc::Status PolicyStreamService::Watch(
    grpc::ServerContext* context, grpc::ServerReaderWriter<PolicyUpdate, SidecarMessage>* stream) {
  SidecarMessage first;
  if (!stream->Read(&first) || !first.has_hello() ||
      first.hello().kind() == leash::v1::SIDECAR_KIND_UNSPECIFIED) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a PolicyStream must open with a hello naming the sidecar kind");
  }
  const int kind = first.hello().kind();
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    generation = ++generation_[kind];
    SidecarState& state = sidecars_[kind];
    if (state.pid != first.hello().pid()) {
      // Another process: what the one before it counted stays counted. (The same process
      // reconnecting goes on from its own totals.)
      for (const leash::v1::WouldBeBlocks& count : state.heartbeat.would_be_blocks()) {
        state.earlier_would_be_blocks[{count.uid(), count.surface()}] += count.count();
      }
      state.heartbeat.clear_would_be_blocks();
    }
    state.connected = true;
    state.pid = first.hello().pid();
    state.sent_version = 0;
    // Acks belong to the connection that sent them: a respawned sidecar has nothing in force
    // until it acks, and a reconnecting one is sent the whole map again and acks it (its hello's
    // in_force_version may be a previous leashd's numbering).
    state.acked_version = 0;
    state.failed_uids.clear();
    state.last_ack_error.clear();
    state.last_heartbeat = absl::Now();
    ++state.connections;
  }

  // Acks and heartbeats arrive on a reader thread; this thread writes updates. The stream
  // ends when either side goes away.
  bool reader_done = false;
  std::thread reader([&] {
    SidecarMessage message;
    while (stream->Read(&message)) {
      bool ack_changed = false;
      {
        absl::MutexLock lock(&mu_);
        if (generation_[kind] != generation) continue;  // a newer connection replaced this one
        SidecarState& state = sidecars_[kind];
        if (message.has_ack()) {
          const std::vector<uint32_t> failed(message.ack().failed_uids().begin(),
                                             message.ack().failed_uids().end());
          ack_changed = failed != state.failed_uids || message.ack().error() != state.last_ack_error;
          state.acked_version = std::max(state.acked_version, message.ack().version());
          state.last_ack_error = message.ack().error();
          state.failed_uids = failed;
        } else if (message.has_heartbeat()) {
          state.last_heartbeat = absl::Now();
          state.heartbeat = message.heartbeat();
        }
      }
      if (ack_changed && on_ack_change_) on_ack_change_(static_cast<leash::v1::SidecarKind>(kind));
    }
    absl::MutexLock lock(&mu_);
    reader_done = true;
  });

  uint64_t sent = 0;
  while (true) {
    PolicyUpdate update;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return shutdown_ || reader_done || version_ > sent;
      };
      // Wake periodically to notice a cancelled call even when nothing is published.
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(200));
      if (shutdown_ || reader_done || context->IsCancelled()) break;
      if (version_ <= sent) continue;
      update = UpdateSince(sent);
      sent = version_;
      if (generation_[kind] == generation) sidecars_[kind].sent_version = sent;
    }
    if (!stream->Write(update)) break;
  }
  context->TryCancel();  // unblocks the reader's Read
  reader.join();
  absl::MutexLock lock(&mu_);
  if (generation_[kind] == generation) {
    // What a gone sidecar acked says nothing about what is in force now.
    sidecars_[kind].connected = false;
    sidecars_[kind].acked_version = 0;
  }
  return grpc::Status::OK;
}

}  // namespace leash::policystream
