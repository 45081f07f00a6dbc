// The watcher's event loop and the decision it makes for each permission event.
//
// Per event (docs/ARCHITECTURE.md, rule F2: the answer always before the log):
//   the watcher's own process -> allow at once;
//   the acting UID (the real UID, see below) not in the map -> allow, no record (the fast path:
//     "an unmapped UID is not a misconfiguration, it is the overwhelming majority of events");
//   in the map with no policy -> deny, or allow under that entry's no_policy fail_mode;
//   in the map with a policy -> the file's path, then DecideCommand for an exec and DecidePath
//     for an open, against that UID's own policy; anything that stops the watcher from
//     deciding (no path, a mount of another namespace, ...) -> that subject's fail_mode.
//   Answer FAN_ALLOW / FAN_DENY, release the descriptors, then hand the record to the log.
//
// Who the subject is: the REAL UID of the acting process. A setuid-root program the agent
// runs (sudo, passwd, a setuid copy it was given) keeps the agent's real UID while its
// effective and filesystem UIDs become root's; judging by euid/fsuid would let any such
// program read on the agent's behalf as an unconfined root. An unprivileged process cannot
// change its real UID to anything but its own, so the agent cannot leave its real UID without
// a program that does it for it (su/sudo after authentication), which the commands policy is
// there to deny. The credentials are the thread-group leader's (what a pidfd names).
//
// Map updates: Publish() swaps in an immutable snapshot with one atomic pointer store; the loop
// takes no lock, ever. The old snapshot is freed, and Publish() returns, only once the loop is
// past the batch that might still be using it, so "returned" means "every event answered from
// now on is judged by the new map" — the moment a version may be acked.
#pragma once

#include <linux/limits.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/policystream/subject_map.h"
#include "proto/sidecar/would_be_blocks.h"
#include "engine/uid_ranges.h"
#include "engine/compiled_policy.h"
#include "engine/decision.h"
#include "engine/decision_record.h"
#include "engine/detectors.h"
#include "fswatch/fanotify_source.h"
#include "fswatch/process_facts.h"
#include "fswatch/process_read_budget.h"
#include "fswatch/subid_hold.h"
#include "leash/v1/policy_stream.pb.h"

namespace leash::fswatch {

// The UID written on records about an event whose process could not be identified.
using engine::kUnknownUid;

struct WatcherOptions {
  pid_t self_pid = 0;
  // fs.protected_hardlinks as read at start: with it on, an account can hard-link only files
  // it owns or may read and write.
  bool protected_hardlinks = true;
  // Test-only fault, compiled only into the testonly leash-fswatch-with-test-faults (with
  // LEASH_FSWATCH_TEST_FAULTS) and honoured there only under --test-faults: the loop stops for
  // good at the first event of a mapped subject, before answering it, so the watchdog can be
  // shown to fire. The leash-fswatch that ships has no such check in its event path.
  bool fault_stall_on_subject_event = false;
  // Events read per pass.
  size_t batch_size = 128;
  // How long the watcher may go without a descriptor for any event (every one failing with
  // EMFILE: its descriptor table full, a leak that does not heal) before the loop ends with
  // EMFILE, so that leashd respawns it. Meanwhile the kernel denies every open on the marked
  // filesystems, root's included.
  absl::Duration descriptor_starvation_limit = absl::Seconds(10);
  // How long a subject's open of /etc/subuid or /etc/subgid is held for its ranges to come
  // into force (subid_hold.h) before it is denied. Longer than a reconcile pass takes.
  absl::Duration subid_hold_limit = absl::Seconds(10);
  // Where a written file or exec line's acting process is read from (pid, ppid, exe and the
  // masked, bounded command line), after the event is answered; null: lines name no process.
  // Not owned; outlives the watcher.
  const ProcessFacts* process_facts = nullptr;
  // How many lines of each UID per second carry the process read (process_read_budget.h);
  // past it a line names only the pid.
  uint32_t process_reads_per_uid_per_second = 64;
  // The monotonic clock the budget reads (nanoseconds); null: CLOCK_MONOTONIC. For tests.
  int64_t (*process_read_clock)() = nullptr;
};

class Watcher {
 public:
  Watcher(FanotifySource& source, engine::DecisionSink& log, WatcherOptions options);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Puts `map` in force. Returns once no event will be judged by the previous map. Writes a
  // critical record for each UID that newly has no policy. Thread-safe; not for the loop.
  void Publish(policystream::SubjectMapPtr map, uint64_t version);

  // The version in force (0: none).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // The map in force (null before the first Publish). Not for the loop.
  policystream::SubjectMapPtr map() const;

  // A takeover's verdict on an event the previous watcher read and never answered, from what
  // that watcher noted in the pending table (sidecar::PendingTable's values): a subject's event
  // under that subject's fail_mode (its policy's, or its no_policy one), an unmapped UID's
  // allowed (it was never the watcher's to judge), and one whose UID was never learned (0, or
  // kReadUnknown) under the strictest fail_mode of the map: denied unless every subject is
  // open. Thread-safe; not for the loop.
  bool JudgeAbandoned(uint64_t noted);
  // The decision record of such an event, once answered.
  void LogAbandoned(uint64_t noted, bool allowed);

  // One pass of the loop: reads what is pending (waiting up to `timeout_ms`) and answers all of
  // it. Returns 0, or -errno when reading from the group failed. Only one thread calls it.
  int RunOnce(int timeout_ms);

  // CLOCK_MONOTONIC nanoseconds at the start of the last pass, for the watchdog.
  int64_t last_pass_ns() const { return last_pass_ns_.load(std::memory_order_relaxed); }
  // Counts the watchdog's time from now: called as the loop starts. A standby's watcher is made
  // long before its loop (it may stand by for hours), and a stamp from then would read as a
  // loop that made no pass for that long, ending the new reader at once on its takeover.
  void StartPassClock();

  // Heartbeat counters: events answered, records lost, queue overflows since start.
  uint64_t events_answered() const { return events_.load(std::memory_order_relaxed); }
  uint64_t overflows() const { return overflows_.load(std::memory_order_relaxed); }
  uint64_t answer_errors() const { return answer_errors_.load(std::memory_order_relaxed); }
  // Events the kernel denied itself because it could not open their file for the watcher.
  uint64_t unopenable() const { return unopenable_.load(std::memory_order_relaxed); }
  // Blocks on an audited surface, answered allow (each logged with enforced: false).
  uint64_t audited_blocks() const { return audited_blocks_.load(std::memory_order_relaxed); }
  // Opens of /etc/subuid or /etc/subgid held now, waiting for their ranges (subid_hold.h).
  size_t held_subid_opens() const { return held_count_.load(std::memory_order_relaxed); }
  // The same per subject UID and surface (filesystem, commands), for `leash status`.
  const sidecar::WouldBeBlockCounter& would_be_blocks() const { return would_be_blocks_; }

 private:
  struct State {
    policystream::SubjectMapPtr map;
    uint64_t version = 0;
    // Whether every subject is under fail_mode open (then an event whose process cannot be
    // identified is allowed; otherwise it is denied).
    bool all_open = false;
    // Subordinate UID -> subject UID, for the UIDs that are not a subject's own.
    engine::UidRangeIndex subordinate;
  };

  // The event's file's path, on the loop's stack (no allocation per event).
  struct EventPath {
    char text[PATH_MAX + 1];
    size_t len = 0;
    absl::string_view view() const { return absl::string_view(text, len); }
  };

  // What judging an event gave: the policy's ruling on the path, whose reason is rendered
  // into the record only after the answer; or, when something other than the policy's lists
  // decided (a failure, a hard link, another namespace's mount, an exec), a decision with its
  // reason already written.
  struct Judgement {
    std::optional<engine::Ruling> ruling;
    engine::Decision decision;  // when !ruling
    // False for a block on an audited surface: logged as a block, answered allow.
    bool enforced = true;
    // A block the policy written above the tier that set the surface's audit makes too, on the
    // same path and facts (set only when there is one, rule L4): audit does not lift it.
    bool above_blocks = false;
    // A block on an audited surface kept for that reason: logged with enforced: true.
    bool kept_under_audit = false;
    // The open of a directory (a listing): its reason ends with engine::kDirectoryListing.
    bool directory = false;
    engine::Verdict verdict() const { return ruling ? ruling->verdict : decision.verdict; }
    static Judgement Of(engine::Decision decision) { return {std::nullopt, std::move(decision)}; }
  };

  // An allowed program's ELF interpreter, which the kernel opens with the exec flag right
  // after the program, in the same exec of the same (single-threaded) process. Loop only.
  struct PendingInterpreter {
    pid_t pid = 0;  // 0: free
    uint16_t interp_len = 0;
    uint16_t program_len = 0;
    char interp[256];  // PT_INTERP, NUL-terminated
    char program[256];  // for the record; cut at 255 bytes
  };
  // Slots by pid (direct-mapped): a collision between a program's event and its interpreter's
  // loses the pending interpreter, which is then judged as a command (closed).
  static constexpr size_t kPendingInterpreters = 1024;

  // A subject's open of /etc/subuid or /etc/subgid the loop has not answered: its ranges were
  // not all in the map in force when it came (subid_hold.h).
  struct HeldOpen {
    FanEvent event;  // its descriptors are released once it is answered
    uint32_t uid = 0;  // the subject's own
    SubidFile file = SubidFile::kUids;
    int64_t deadline_ns = 0;
    uint64_t checked_version = 0;  // the map version it was last checked against
    std::string path;
    std::string missing;  // a range not in force, for the record
  };
  // Held at once at most; one more is denied (an agent opening the file in a loop cannot grow
  // the watcher's memory or descriptors).
  static constexpr size_t kMaxHeldOpens = 64;
  // How often the loop wakes to look at held opens while it has any (a new map, a deadline).
  static constexpr int kHeldPollMs = 2;
  enum class SubidGate { kPass, kAnswered, kHeld };

  // Judges and answers the event; returns true when it is held instead (its descriptors are
  // then the held list's, not the batch's).
  bool Handle(const FanEvent& event, const State& state);
  // For an open about to be allowed: a subject's open of a subordinate ID file whose ranges
  // are not all in force is held (kHeld), or denied when it cannot be held or read (kAnswered).
  SubidGate GateSubidOpen(const FanEvent& event, const policystream::SubjectEntry& entry,
                          absl::string_view path);
  // Answers the held opens whose ranges are now in force (judged anew by `state`) or whose
  // deadline has passed (denied).
  void RecheckHeld(const State& state);
  // An exec event's judgement: the pending interpreter of this process's exec, or a command
  // judged by the policy (a name entry only for a root-controlled program).
  Judgement JudgeExec(const FanEvent& event, const engine::CompiledPolicy& policy,
                      const FileFacts& facts, absl::string_view path);
  // Whether a root-controlled exec event is the kernel loading `pending`'s interpreter: the
  // very file (dev, ino) its PT_INTERP names from the host's root, opened by the ELF loader.
  bool IsPendingInterpreter(const FanEvent& event, const PendingInterpreter& pending,
                            const FileFacts& facts);
  // The subject `uid` belongs to: its own, or the one whose subordinate range holds it.
  static const policystream::SubjectEntry* SubjectOf(const State& state, uint32_t uid);
  // Judges a mapped subject's event. Sets `path` to the path the record shows (empty when it
  // could not be read).
  Judgement Judge(const FanEvent& event, const policystream::SubjectEntry& entry, const Creds& creds,
                  EventPath& path);
  void Answer(const FanEvent& event, bool allow);
  // `path` goes to the record's subject as its path, or its binary for an exec.
  // `pid`: the acting process, named on the line when it is written (0: none).
  void Log(uint32_t uid, leash::v1::Surface surface, const engine::Decision& decision,
           absl::string_view path, bool critical, pid_t pid = 0);
  void Log(uint32_t uid, leash::v1::Surface surface, const Judgement& judgement,
           absl::string_view path, pid_t pid = 0);
  // The record's line, rendered straight into the log's queue slot; `append_reason` writes
  // the reason into it.
  void LogLine(uint32_t uid, leash::v1::Surface surface, engine::Verdict verdict,
               absl::string_view path, bool critical,
               absl::FunctionRef<void(std::string&)> append_reason, bool enforced = true,
               bool kept_under_audit = false, pid_t pid = 0);
  uint64_t NextRandom();

  FanotifySource& source_;
  engine::DecisionSink& log_;
  const WatcherOptions options_;
  // Masks the acting process's command line; set when options_.process_facts is.
  std::unique_ptr<const tools::Inspector> inspector_;
  // Acting-process reads left to each UID this second (lines are written from the loop and,
  // rarely, from a publisher).
  absl::Mutex process_budget_mu_;
  ProcessReadBudget process_budget_ ABSL_GUARDED_BY(process_budget_mu_);
  // Whether a line of `uid` may carry the process read now (process_budget_).
  bool TakeProcessRead(uint32_t uid);

  std::atomic<const State*> state_{nullptr};
  // Odd while the loop is inside a batch (holding a State*), even between batches.
  std::atomic<uint64_t> loop_epoch_{0};
  std::atomic<uint64_t> version_{0};
  mutable std::mutex publish_mu_;  // serializes publishers; the loop never takes it
  policystream::SubjectMapPtr published_ ABSL_GUARDED_BY(publish_mu_);

  std::atomic<int64_t> last_pass_ns_{0};
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> overflows_{0};
  std::atomic<uint64_t> unopenable_{0};
  std::atomic<uint64_t> audited_blocks_{0};
  sidecar::WouldBeBlockCounter would_be_blocks_;
  // Loop thread only: CLOCK_MONOTONIC ns of the first EMFILE event since an event last had a
  // descriptor (0: none).
  int64_t starved_since_ns_ = 0;
  std::atomic<uint64_t> answer_errors_{0};

  std::vector<FanEvent> batch_;  // loop thread only
  std::vector<HeldOpen> held_;   // loop thread only
  std::atomic<size_t> held_count_{0};
  std::vector<PendingInterpreter> interpreters_;  // loop thread only; sized once
  uint64_t rng_state_ = 0;       // set once at construction
};

}  // namespace leash::fswatch
