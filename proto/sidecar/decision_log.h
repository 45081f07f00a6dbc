// The decision log as a process writes it: each record is rendered as one JSON line by the
// thread that logs it, into a bounded queue that never blocks the enforcer, and a writer
// thread writes the lines, many to one write(2), to a descriptor leashd opened with O_APPEND (the file in logging.decisions, or
// stdout) and handed over before the process started deciding. Sidecars own no files: they
// only ever write to that descriptor.
//
// "Writing never blocks a decision": when the queue is full a record is dropped and counted,
// and the count of lost records is itself written as a critical record once there is room.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/types/span.h"
#include "proto/sidecar/decision_line_gate.h"
#include "engine/decision_record.h"

namespace leash::sidecar {

// The largest datagram a writer sends on the live feed, and the buffer leashd reads each one
// into (controlplane/decision_feed.cc). A datagram longer than the reader's buffer would be cut
// short without a word, so the lines it carries would be lost from the stream uncounted; a
// writer sends longer batches as several datagrams, and a single line longer than this (a tool
// call's inputs, escaped) is not sent and counted as a feed drop. The log file has it.
inline constexpr size_t kMaxFeedDatagram = 256 * 1024;

class AsyncDecisionLog : public engine::DecisionSink {
 public:
  // Takes ownership of `fd`. `capacity`: records the queue holds before it drops. `limits`:
  // the allow lines each subject may write (DecisionLineGate). `surface`: the writer's own, on
  // the lines it writes about itself (held-back allow lines, lines the feed lost) and on lost
  // records whose surface is not known.
  explicit AsyncDecisionLog(int fd, size_t capacity = 8192,
                            DecisionLineGate::Limits limits = DecisionLineGate::Limits(),
                            engine::Surface surface = leash::v1::SURFACE_UNSPECIFIED);
  // Writes what is queued, then stops the writer thread and closes the descriptor. A writer
  // still blocked on its descriptor after shutdown_wait() is left running on its own (leaked)
  // state, so a descriptor nobody drains cannot hold up the caller's shutdown.
  ~AsyncDecisionLog() override;

  // How long the destructor waits for the writer (2 s unless set; tests set less).
  void set_shutdown_wait(std::chrono::milliseconds wait) { shutdown_wait_ = wait; }
  std::chrono::milliseconds shutdown_wait() const { return shutdown_wait_; }

  // Never blocks and never takes a lock the writer thread can hold for long. Thread-safe.
  // Applies the gate (the record's uid, action and severity) before anything is queued, and
  // names the uid's account (AccountOf) when the record does not. A record lost to a full
  // queue is counted by its surface and action, and said so in a critical "lost" line.
  void Record(leash::v1::DecisionRecord record) override;
  // The account a line names for `uid`: a name SetAccounts gave, else engine::AccountLabel's
  // ("root", "uid:<n>"). Looks nothing up outside this process: a short reader lock only.
  std::string AccountOf(uint32_t uid) override;
  // Adds (or renames) the accounts of these UIDs; each writer gives every subject's on each
  // policy map. Thread-safe.
  void SetAccounts(absl::Span<const std::pair<uint32_t, std::string>> accounts);
  // The gate's answer for a line the caller is about to render (RecordLine does not apply it).
  bool Admits(uint32_t uid, engine::Verdict verdict, bool critical) override;
  // The subject's logging.level from now on (each writer sets it from every policy map).
  void SetLevel(uint32_t uid, LogLevel level);
  // `append_line` writes its line straight into a queue slot (no allocation once the slot's
  // string has grown). Never blocks; a full queue drops the record (counted) without calling
  // `append_line`.
  void RecordLine(absl::FunctionRef<void(std::string&)> append_line) override;
  // The same, counted by `surface` and `verdict` when the queue is full.
  void RecordLine(engine::Surface surface, engine::Verdict verdict,
                  absl::FunctionRef<void(std::string&)> append_line) override;

  // Records dropped because the queue was full, since start.
  uint64_t lost() const;

  // From now on every batch the writer writes to the log is also sent, as one datagram and
  // without waiting, on `fd` (takes ownership): a connected AF_UNIX datagram socket whose
  // other end leashd reads (its live decision stream). The socket's queue is the bound: when
  // leashd has not drained it the batch is not sent and its lines are counted
  // (feed_dropped()) and said, once there is room, in a critical line of the log and the
  // stream. The log file is still written first and whole. Call before records flow.
  void AttachFeed(int fd);
  // Lines not sent on the feed because its queue was full (or leashd gone), since start.
  uint64_t feed_dropped() const;
  // Blocks until every record queued before the call has been written (tests, shutdown).
  void Flush();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  std::chrono::milliseconds shutdown_wait_{std::chrono::seconds(2)};
};

}  // namespace leash::sidecar
