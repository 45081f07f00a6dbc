#include "fswatch/watcher.h"

#include <linux/limits.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/compiled_policy.h"
#include "engine/path_entry.h"
#include "engine/process_cmdline.h"

namespace leash::fswatch {
namespace {

using engine::Decision;
using engine::FailDecision;
using engine::FailMode;
using engine::Verdict;
using leash::v1::SURFACE_COMMANDS;
using leash::v1::SURFACE_FILESYSTEM;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr absl::string_view kDeletedSuffix = " (deleted)";

// The record's ts, as engine::MakeDecisionRecord writes it ("%Y-%m-%dT%H:%M:%E6SZ", UTC):
// "2026-11-30T01:02:03.123456Z". The date and time are formatted once a second, the
// microseconds by hand (no printf on the hot path). Returns the length written to `out`.
constexpr size_t kTimestampSize = 32;
size_t FormatTimestamp(char (&out)[kTimestampSize]) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  thread_local int64_t cached_second = -1;
  thread_local char prefix[24];
  thread_local size_t prefix_len = 0;
  if (now.tv_sec != cached_second) {
    const std::string text = absl::FormatTime(
        "%Y-%m-%dT%H:%M:%S", absl::FromUnixSeconds(now.tv_sec), absl::UTCTimeZone());
    prefix_len = std::min(text.size(), sizeof(prefix));
    memcpy(prefix, text.data(), prefix_len);
    cached_second = now.tv_sec;
  }
  size_t len = std::min(prefix_len, kTimestampSize - 9);
  memcpy(out, prefix, len);
  out[len++] = '.';
  long micros = now.tv_nsec / 1000;
  for (int digit = 5; digit >= 0; --digit) {
    out[len + digit] = static_cast<char>('0' + micros % 10);
    micros /= 10;
  }
  len += 6;
  out[len++] = 'Z';
  return len;
}

// Whether the subject could have made a second name for this file itself. With
// fs.protected_hardlinks on (Debian's default) the kernel lets an account hard-link only a file
// it owns, or one it may both read and write. Group access is counted whatever the file's group,
// since the subject's supplementary groups are not known here: closed, not open.
bool SubjectCouldHaveLinked(const FileFacts& facts, const Creds& creds,
                            const policystream::SubjectEntry& subject, bool protected_hardlinks) {
  if (!protected_hardlinks) return true;
  if (facts.uid == creds.ruid || facts.uid == subject.uid) return true;
  // A file one of its subordinate UIDs owns: the agent links it from inside its namespace.
  for (const engine::UidRange& range : subject.subordinate_uids) {
    if (range.Contains(facts.uid)) return true;
  }
  const bool other_rw = (facts.mode & S_IROTH) && (facts.mode & S_IWOTH);
  const bool group_rw = (facts.mode & S_IRGRP) && (facts.mode & S_IWGRP);
  return other_rw || group_rw;
}

// Whether the policy denies any path at all (whitelist, or a deny entry): only then can a
// second name of a file lead somewhere the policy would refuse.
bool FilesystemDeniesSomething(const engine::CompiledPolicy& policy) {
  const leash::v1::SurfacePolicy& fs = policy.config().filesystem();
  return fs.mode() != leash::v1::MODE_BLACKLIST || fs.deny().entries_size() > 0;
}

}  // namespace

FanEvent::Kind FanEvent::kind() const {
  if (open_error != 0) return Kind::kUnopenable;
  if (mask & FAN_Q_OVERFLOW) return Kind::kOverflow;
  if (mask & FAN_OPEN_EXEC_PERM) return Kind::kExec;
  if (mask & FAN_OPEN_PERM) return Kind::kOpen;
  return Kind::kOther;
}

const char* IdentityMethodName(IdentityMethod method) {
  switch (method) {
    case IdentityMethod::kPidfdCache:
      return "pidfd (ioctl PIDFD_GET_INFO on every event, through a pidfd kept per process: no "
             "/proc read, no PID-reuse race)";
    case IdentityMethod::kProcStatusPidfdChecked:
      return "/proc/<pid>/status checked against the event's pidfd (no PID-reuse race; "
             "PIDFD_GET_INFO not available or not chosen)";
    case IdentityMethod::kProcStatus:
      return "/proc/<pid>/status (the spec's way; a PID recycled between the event and the read "
             "is attributed to its new owner: kernel lacks FAN_REPORT_PIDFD)";
  }
  return "unknown";
}

Watcher::Watcher(FanotifySource& source, engine::DecisionSink& log, WatcherOptions options)
    : source_(source),
      log_(log),
      options_(std::move(options)),
      process_budget_(options_.process_reads_per_uid_per_second),
      batch_(options_.batch_size),
      interpreters_(kPendingInterpreters) {
  rng_state_ = static_cast<uint64_t>(MonotonicNs()) ^ (static_cast<uint64_t>(options_.self_pid) << 32);
  if (options_.process_facts != nullptr) {
    // The built-in patterns always compile (the detectors' tests); were one not to, the lines
    // would name no process rather than show an unmasked command line.
    auto inspector = tools::Inspector::Create();
    if (inspector.ok()) inspector_ = *std::move(inspector);
  }
  last_pass_ns_.store(MonotonicNs(), std::memory_order_relaxed);
}

Watcher::~Watcher() {
  // Nobody will answer a held open after this: denied, never left to the kernel.
  for (HeldOpen& held : held_) {
    Answer(held.event, false);
    source_.ReleaseAll(absl::MakeConstSpan(&held.event, 1));
  }
  delete state_.load(std::memory_order_acquire);
}

policystream::SubjectMapPtr Watcher::map() const {
  std::lock_guard<std::mutex> lock(publish_mu_);
  return published_;
}

void Watcher::Publish(policystream::SubjectMapPtr map, uint64_t version) {
  std::lock_guard<std::mutex> lock(publish_mu_);
  auto* next = new State;
  next->map = map;
  next->version = version;
  next->all_open = true;
  for (const auto& [uid, entry] : *map) {
    for (const engine::UidRange& range : entry.subordinate_uids) next->subordinate.Add(range, uid);
  }
  if (!next->subordinate.Build()) {
    // leashd sends disjoint ranges; an overlap means a map caught between two passes. Each
    // shared UID is still judged as one of the subjects (never as nobody's). Said, critical.
    LogLine(kUnknownUid, SURFACE_FILESYSTEM, Verdict::kBlock, {}, /*critical=*/true,
            [](std::string& out) {
              out += "two subjects' subordinate UID ranges overlap in the map; each shared UID "
                     "is judged as the subject whose range starts first";
            });
  }
  for (const auto& [uid, entry] : *map) {
    const FailMode mode =
        entry.policy == nullptr ? entry.no_policy_fail_mode : entry.policy->fail_mode();
    if (mode != FailMode::kOpen) next->all_open = false;
  }

  const State* old = state_.exchange(next, std::memory_order_seq_cst);
  // The loop loads the pointer only after making its epoch odd, so an even epoch seen here
  // means it will load the new one; an odd one means waiting for that batch to end.
  const uint64_t epoch = loop_epoch_.load(std::memory_order_seq_cst);
  if (epoch & 1) {
    while (loop_epoch_.load(std::memory_order_seq_cst) == epoch) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  delete old;
  version_.store(version, std::memory_order_release);

  // "logged critical once": each UID that has no policy now and had one (or was absent, or was
  // only being onboarded) before. A subject being onboarded is denied without a notice: its
  // policy follows in the same pass, and a new subject is not a misconfiguration.
  for (const auto& [uid, entry] : *map) {
    if (entry.policy != nullptr || entry.onboarding) continue;
    if (published_ != nullptr) {
      auto it = published_->find(uid);
      if (it != published_->end() && it->second.policy == nullptr && !it->second.onboarding) {
        continue;
      }
    }
    const Decision decision =
        FailDecision(entry.no_policy_fail_mode, SURFACE_FILESYSTEM,
                     absl::StrCat("subject ", entry.account, " has no policy (",
                                  entry.no_policy_reason,
                                  "); every filesystem and exec event it raises is judged so"));
    Log(uid, SURFACE_FILESYSTEM, decision, /*path=*/{}, /*critical=*/true);
  }
  published_ = std::move(map);
}

bool Watcher::JudgeAbandoned(uint64_t noted) {
  constexpr uint64_t kSubject = uint64_t{1} << 32;  // sidecar::PendingTable::kSubject
  std::lock_guard<std::mutex> lock(publish_mu_);
  if (published_ == nullptr) return false;  // no map: nothing to judge by, closed
  if ((noted & kSubject) == 0) {
    bool all_open = true;
    for (const auto& [uid, entry] : *published_) {
      const FailMode mode =
          entry.policy == nullptr ? entry.no_policy_fail_mode : entry.policy->fail_mode();
      if (mode != FailMode::kOpen) all_open = false;
    }
    return all_open;
  }
  const uint32_t uid = static_cast<uint32_t>(noted);
  auto it = published_->find(uid);
  if (it == published_->end()) {
    // A subordinate UID (a predecessor that noted the process's own UID): its subject's. A scan,
    // but only for an event a dead watcher left.
    it = std::find_if(published_->begin(), published_->end(), [uid](const auto& subject) {
      return std::any_of(subject.second.subordinate_uids.begin(),
                         subject.second.subordinate_uids.end(),
                         [uid](const engine::UidRange& range) { return range.Contains(uid); });
    });
  }
  if (it == published_->end()) return true;  // not a subject
  const policystream::SubjectEntry& entry = it->second;
  if (entry.policy != nullptr && !entry.policy->config().enforcers().filesystem()) return true;
  const FailMode mode =
      entry.policy == nullptr ? entry.no_policy_fail_mode : entry.policy->fail_mode();
  return mode == FailMode::kOpen;
}

void Watcher::LogAbandoned(uint64_t noted, bool allowed) {
  constexpr uint64_t kSubject = uint64_t{1} << 32;
  if ((noted & kSubject) != 0) {
    std::lock_guard<std::mutex> lock(publish_mu_);
    // Not a subject's: never logged, as on the fast path.
    if (published_ == nullptr || !published_->contains(static_cast<uint32_t>(noted))) return;
  }
  Decision decision;
  decision.verdict = allowed ? Verdict::kAllow : Verdict::kBlock;
  decision.reason = (noted & kSubject) != 0
                        ? "the watcher that read this event died before answering it; its "
                          "successor answered it under the subject's fail_mode"
                        : "the watcher that read this event died before learning whose it was; "
                          "its successor answered it under the strictest fail_mode of the map";
  Log((noted & kSubject) != 0 ? static_cast<uint32_t>(noted) : kUnknownUid, SURFACE_FILESYSTEM,
      decision, /*path=*/{}, /*critical=*/(noted & kSubject) == 0);
}

void Watcher::StartPassClock() { last_pass_ns_.store(MonotonicNs(), std::memory_order_relaxed); }

int Watcher::RunOnce(int timeout_ms) {
  if (!held_.empty()) timeout_ms = std::min(timeout_ms, kHeldPollMs);
  const int n = source_.ReadEvents(absl::MakeSpan(batch_), timeout_ms);
  last_pass_ns_.store(MonotonicNs(), std::memory_order_relaxed);
  if (n < 0 || (n == 0 && held_.empty())) return n;
  loop_epoch_.fetch_add(1, std::memory_order_seq_cst);
  const State* state = state_.load(std::memory_order_seq_cst);
  for (int i = 0; i < n; ++i) {
    if (state == nullptr) {
      // No map yet means no marks yet, so nothing should arrive; whatever does is not ours to
      // judge.
      if (batch_[i].kind() == FanEvent::Kind::kOpen || batch_[i].kind() == FanEvent::Kind::kExec) {
        Answer(batch_[i], true);
      }
      continue;
    }
    if (Handle(batch_[i], *state)) {
      // Held: its descriptors are the held list's now.
      batch_[i].fd = -1;
      batch_[i].pidfd = -1;
    }
  }
  if (state != nullptr && !held_.empty()) RecheckHeld(*state);
  held_count_.store(held_.size(), std::memory_order_relaxed);
  loop_epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (n == 0) return 0;
  // Every event of the batch is answered: their descriptors go together (a few syscalls for
  // the batch rather than one per event).
  source_.ReleaseAll(absl::MakeConstSpan(batch_.data(), static_cast<size_t>(n)));
  if (starved_since_ns_ != 0) {
    // Out of descriptors since then: one event with a file means it has healed.
    const bool healed = std::any_of(batch_.begin(), batch_.begin() + n,
                                    [](const FanEvent& e) { return e.fd >= 0; });
    if (healed) {
      starved_since_ns_ = 0;
    } else if (MonotonicNs() - starved_since_ns_ >=
               absl::ToInt64Nanoseconds(options_.descriptor_starvation_limit)) {
      return -EMFILE;
    }
  }
  return 0;
}

void Watcher::Answer(const FanEvent& event, bool allow) {
  const int error = source_.Respond(event, allow);
  events_.fetch_add(1, std::memory_order_relaxed);
  if (error != 0) {
    answer_errors_.fetch_add(1, std::memory_order_relaxed);
    Decision decision;
    decision.verdict = allow ? Verdict::kAllow : Verdict::kBlock;
    decision.reason = absl::StrCat("fanotify: answering the event of pid ", event.pid,
                                   " failed (errno ", error, ")");
    Log(kUnknownUid, SURFACE_FILESYSTEM, decision, /*path=*/{}, /*critical=*/true);
  }
}

Watcher::SubidGate Watcher::GateSubidOpen(const FanEvent& event,
                                          const policystream::SubjectEntry& entry,
                                          absl::string_view path) {
  const std::optional<SubidFile> file = SubidFileAt(path);
  if (!file) return SubidGate::kPass;
  std::string content;
  std::string missing;
  const int error = source_.ContentOf(event, kSubidFileLimit, content);
  if (error == 0 && SubidRangesInForce(content, *file, entry, missing)) return SubidGate::kPass;
  if (error != 0 || held_.size() >= kMaxHeldOpens) {
    Answer(event, false);
    Decision decision;
    decision.verdict = Verdict::kBlock;
    decision.reason =
        error != 0
            ? absl::StrCat("cannot read ", path, " to tell whether the ranges it gives are in "
                           "force (errno ", error, "); denied, as newuidmap could map them")
            : absl::StrCat(path, " gives ranges not in force yet (", missing, ") and ",
                           kMaxHeldOpens, " opens of it are already held; denied");
    Log(entry.uid, SURFACE_FILESYSTEM, decision, path, /*critical=*/false);
    return SubidGate::kAnswered;
  }
  HeldOpen held;
  held.event = event;
  held.uid = entry.uid;
  held.file = *file;
  held.deadline_ns = MonotonicNs() + absl::ToInt64Nanoseconds(options_.subid_hold_limit);
  held.checked_version = version_.load(std::memory_order_acquire);
  held.path = std::string(path);
  held.missing = std::move(missing);
  held_.push_back(std::move(held));
  return SubidGate::kHeld;
}

void Watcher::RecheckHeld(const State& state) {
  const int64_t now = MonotonicNs();
  std::vector<HeldOpen> ready;
  for (auto it = held_.begin(); it != held_.end();) {
    bool in_force = false;
    if (it->checked_version != state.version) {
      it->checked_version = state.version;
      auto subject = state.map->find(it->uid);
      std::string content;
      in_force = subject == state.map->end() ||
                 (source_.ContentOf(it->event, kSubidFileLimit, content) == 0 &&
                  SubidRangesInForce(content, it->file, subject->second, it->missing));
    }
    if (in_force) {
      ready.push_back(std::move(*it));
      it = held_.erase(it);
      continue;
    }
    if (now < it->deadline_ns) {
      ++it;
      continue;
    }
    Answer(it->event, false);
    Decision decision;
    decision.verdict = Verdict::kBlock;
    decision.reason = absl::StrCat(
        it->path, " gives ranges that were not in force within ",
        absl::FormatDuration(options_.subid_hold_limit), " (", it->missing,
        "): denied, so newuidmap cannot map them unconfined");
    Log(it->uid, SURFACE_FILESYSTEM, decision, it->path, /*critical=*/false);
    source_.ReleaseAll(absl::MakeConstSpan(&it->event, 1));
    it = held_.erase(it);
  }
  // In force now (or no longer a subject's): judged anew by this map, as if it came now.
  for (HeldOpen& held : ready) {
    if (!Handle(held.event, state)) source_.ReleaseAll(absl::MakeConstSpan(&held.event, 1));
  }
}

bool Watcher::Handle(const FanEvent& event, const State& state) {
  const FanEvent::Kind kind = event.kind();
  if (kind == FanEvent::Kind::kOverflow) {
    overflows_.fetch_add(1, std::memory_order_relaxed);
    Decision decision;
    decision.verdict = Verdict::kAllow;
    decision.reason =
        "fanotify: the kernel's event queue overflowed; events were lost (permission events are "
        "never dropped while the queue is unlimited, so this should not happen)";
    Log(kUnknownUid, SURFACE_FILESYSTEM, decision, /*path=*/{}, /*critical=*/true);
    return false;
  }
  if (kind == FanEvent::Kind::kUnopenable) {
    // Nothing to answer: the kernel has denied it. Said, under the opener's UID where the
    // kernel names the process (FAN_REPORT_FD_ERROR) and it can still be identified.
    unopenable_.fetch_add(1, std::memory_order_relaxed);
    if (event.open_error == EMFILE && starved_since_ns_ == 0) starved_since_ns_ = MonotonicNs();
    Creds creds;
    const bool known = event.pid > 0 && source_.CredsOf(event, creds) == 0;
    Decision decision;
    decision.verdict = Verdict::kBlock;
    decision.reason = absl::StrCat(
        "fanotify: the kernel could not open an event's file for the watcher (",
        strerrorname_np(event.open_error) != nullptr ? strerrorname_np(event.open_error) : "errno",
        " ", event.open_error, ") and denied that open itself",
        event.pid > 0 ? absl::StrCat(" (pid ", event.pid, ")")
                      : std::string("; the kernel does not say whose open it was"));
    Log(known ? creds.ruid : kUnknownUid, SURFACE_FILESYSTEM, decision, /*path=*/{},
        /*critical=*/true);
    return false;
  }
  if (kind == FanEvent::Kind::kOther) {
    return false;
  }
  const leash::v1::Surface surface = kind == FanEvent::Kind::kExec ? SURFACE_COMMANDS
                                                                   : SURFACE_FILESYSTEM;
  // The watcher's own threads (the log writer, the subscriber, the marker) are answered at
  // once: nobody else would answer them.
  if (event.pid == options_.self_pid) {
    Answer(event, true);
    return false;
  }

  Creds creds;
  const int identity_error = source_.CredsOf(event, creds);
  if (identity_error != 0) {
    // Not knowing whose event this is, it is judged under the strictest fail_mode of the map.
    // ESRCH: the process is gone and nobody waits for the answer.
    Answer(event, state.all_open);
    if (identity_error != ESRCH) {
      const Decision decision = FailDecision(
          state.all_open ? FailMode::kOpen : FailMode::kClosed, surface,
          absl::StrCat("cannot identify the process (pid ", event.pid, ", errno ",
                       identity_error, ")"));
      Log(kUnknownUid, surface, decision, /*path=*/{}, /*critical=*/true);
    }
    return false;
  }

  const policystream::SubjectEntry* const subject = SubjectOf(state, creds.ruid);
  // The subject's own UID (a subordinate UID is recorded as its subject's), so a watcher taking
  // over an event this one read finds the subject by it.
  source_.NoteSubject(event, subject != nullptr ? subject->uid : creds.ruid);
  if (subject == nullptr) {
    Answer(event, true);  // not a subject: the fast path
    return false;
  }
  const policystream::SubjectEntry& entry = *subject;

  if (entry.policy == nullptr) {
    const Decision decision =
        FailDecision(entry.no_policy_fail_mode, surface,
                     absl::StrCat("subject has no policy (", entry.no_policy_reason, ")"));
#ifdef LEASH_FSWATCH_TEST_FAULTS
    if (options_.fault_stall_on_subject_event) {
      for (;;) pause();  // test-only: hold the event and stop the loop
    }
#endif
    EventPath path;
    if (decision.allowed() && kind == FanEvent::Kind::kOpen) {
      // Allowed under fail_mode open: not before the subordinate ID files' ranges are in force.
      if (source_.PathOf(event, path.text, sizeof(path.text), path.len) != 0) path.len = 0;
      const SubidGate gate = GateSubidOpen(event, entry, path.view());
      if (gate != SubidGate::kPass) return gate == SubidGate::kHeld;
    }
    Answer(event, decision.allowed());
    // The path only for the record, after the answer.
    if (path.len == 0 &&
        source_.PathOf(event, path.text, sizeof(path.text), path.len) != 0) {
      path.len = 0;
    }
    Log(entry.uid, surface, decision, path.view(), /*critical=*/false, event.pid);
    return false;
  }
  if (!entry.policy->config().enforcers().filesystem()) {
    // The subject's filesystem/commands enforcer is switched off; the subordinate ID files'
    // ranges are the network's and every surface's, so their hold stays.
    if (kind == FanEvent::Kind::kOpen) {
      EventPath path;
      if (source_.PathOf(event, path.text, sizeof(path.text), path.len) == 0) {
        const SubidGate gate = GateSubidOpen(event, entry, path.view());
        if (gate != SubidGate::kPass) return gate == SubidGate::kHeld;
      }
    }
    Answer(event, true);
    return false;
  }

#ifdef LEASH_FSWATCH_TEST_FAULTS
  if (options_.fault_stall_on_subject_event) {
    for (;;) pause();  // test-only: hold the event and stop the loop
  }
#endif
  EventPath path;
  Judgement judgement = Judge(event, entry, creds, path);
  if (judgement.verdict() == Verdict::kBlock && entry.policy->audited(surface)) {
    if (judgement.above_blocks) {
      // Rule L4: audit never lifts a block the policy written above its tier makes too.
      judgement.kept_under_audit = true;
    } else {
      // Audit: decided as the policy says, logged as the block it would be, and let through.
      judgement.enforced = false;
      audited_blocks_.fetch_add(1, std::memory_order_relaxed);
      // Counted as decided, under the subject's UID its line carries: the line itself may be
      // lost on a full log queue.
      would_be_blocks_.Add(entry.uid, surface);
    }
  }
  const bool allow = judgement.verdict() == Verdict::kAllow || !judgement.enforced;
  if (allow && kind == FanEvent::Kind::kOpen && path.len > 0) {
    const SubidGate gate = GateSubidOpen(event, entry, path.view());
    if (gate != SubidGate::kPass) return gate == SubidGate::kHeld;
  }
  Answer(event, allow);
  Log(entry.uid, surface, judgement, path.view(), event.pid);
  return false;
}

const policystream::SubjectEntry* Watcher::SubjectOf(const State& state, uint32_t uid) {
  auto it = state.map->find(uid);
  if (it != state.map->end()) return &it->second;
  if (state.subordinate.empty()) return nullptr;
  const std::optional<uint32_t> owner = state.subordinate.Find(uid);
  if (!owner) return nullptr;
  it = state.map->find(*owner);
  return it == state.map->end() ? nullptr : &it->second;
}

Watcher::Judgement Watcher::Judge(const FanEvent& event, const policystream::SubjectEntry& entry,
                                  const Creds& creds, EventPath& event_path) {
  const engine::CompiledPolicy& policy = *entry.policy;
  const bool exec = event.kind() == FanEvent::Kind::kExec;
  const leash::v1::Surface surface = exec ? SURFACE_COMMANDS : SURFACE_FILESYSTEM;
  // An event that cannot be judged on its lists: the policy above an audit (rule L4) would
  // fail on it the same way, so audit does not lift it where there is one.
  auto failed = [&](Decision decision) {
    Judgement judgement = Judgement::Of(std::move(decision));
    judgement.above_blocks = policy.audit_above(surface) != nullptr;
    return judgement;
  };

  if (const int error = source_.PathOf(event, event_path.text, sizeof(event_path.text),
                                      event_path.len);
      error != 0) {
    event_path.len = 0;
    return failed(FailDecision(
        policy.fail_mode(), surface,
        absl::StrCat("cannot read the path of the opened file (errno ", error, ")")));
  }
  FileFacts facts;
  if (const int error = source_.FactsOf(event, facts); error != 0) {
    return failed(FailDecision(
        policy.fail_mode(), surface,
        absl::StrCat("cannot stat ", event_path.view(), " (errno ", error, ")")));
  }
  // An unlinked file is named "<its last name> (deleted)"; judge it by that name. A file
  // that really is called "x (deleted)" still has links and keeps its name.
  if (facts.nlink == 0 && absl::EndsWith(event_path.view(), kDeletedSuffix)) {
    event_path.len -= kDeletedSuffix.size();
  }
  const absl::string_view path = event_path.view();

  if (facts.mount == FileFacts::Mount::kForeign) {
    return failed(FailDecision(
        policy.fail_mode(), surface,
        absl::StrCat(path,
                     " was opened through a mount of another mount namespace (a bind mount "
                     "or overlay made after unshare), where its path is the opener's choice")));
  }

  if (exec) return JudgeExec(event, policy, facts, path);
  // The kernel's paths are normal; the ruling's reason is rendered after the answer.
  Judgement judgement;
  // A directory's open is a listing (the marks carry FAN_ONDIR): judged like a file, except
  // that a whitelist lets the way to an allowed folder be listed (names only).
  const bool directory = S_ISDIR(facts.mode);
  judgement.directory = directory;
  const bool normal = engine::IsNormalAbsolutePath(path);
  // A file with other names the subject could have made, under a policy that denies some path.
  auto second_name_refused = [&](const engine::CompiledPolicy& by) {
    return facts.regular && facts.nlink > 1 && FilesystemDeniesSomething(by) &&
           SubjectCouldHaveLinked(facts, creds, entry, options_.protected_hardlinks);
  };
  if (normal) {
    judgement.ruling =
        directory ? policy.RuleOnNormalDirectory(path) : policy.RuleOnNormalPath(path);
  } else {
    judgement.decision = directory ? policy.DecideDirectory(path) : policy.DecidePath(path);
  }
  // Rule L4: a block the policy written above the tier that set audit makes too is kept.
  auto above_blocks = [&](const engine::CompiledPolicy& above) {
    const Verdict verdict =
        normal ? (directory ? above.RuleOnNormalDirectory(path) : above.RuleOnNormalPath(path))
                     .verdict
               : (directory ? above.DecideDirectory(path) : above.DecidePath(path)).verdict;
    return verdict == Verdict::kBlock || second_name_refused(above);
  };
  if (judgement.verdict() == Verdict::kAllow && second_name_refused(policy)) {
    judgement.ruling.reset();
    judgement.decision.verdict = Verdict::kBlock;
    judgement.decision.reason = absl::StrCat(
        "filesystem: ", path, " has ", facts.nlink,
        " names and the subject could have made the others itself; a hard link has no single "
        "real path, and its other names (which the policy may deny) cannot be seen");
  }
  if (judgement.verdict() == Verdict::kBlock) {
    if (const engine::CompiledPolicy* above = policy.audit_above(SURFACE_FILESYSTEM)) {
      judgement.above_blocks = above_blocks(*above);
    }
  }
  return judgement;
}

Watcher::Judgement Watcher::JudgeExec(const FanEvent& event, const engine::CompiledPolicy& policy,
                                      const FileFacts& facts, absl::string_view path) {
  // An allowed program's interpreter must pass what a name entry's program must (the host's
  // PT_INTERP may still lead to a file the agent owns or may rewrite), and any other exec is a
  // command that needs it: asked once.
  bool root_controlled = false;
  if (source_.IsRootControlled(event, path, facts, root_controlled) != 0) root_controlled = false;
  PendingInterpreter& pending =
      interpreters_[static_cast<uint32_t>(event.pid) % interpreters_.size()];
  if (pending.pid == event.pid) {
    // One exec, one interpreter: whatever this event is, the pending one is used up. Any other
    // exec of the process (the loader run directly, a later exec after this one failed) is a
    // command of its own.
    pending.pid = 0;
    if (root_controlled && IsPendingInterpreter(event, pending, facts)) {
      Decision decision;
      decision.verdict = Verdict::kAllow;
      decision.reason = absl::StrCat(
          "commands: ", path, engine::kElfInterpreterOf,
          absl::string_view(pending.program, pending.program_len),
          ", which was allowed; the kernel loads it as part of that exec");
      return Judgement::Of(std::move(decision));
    }
  }
  Decision decision = policy.DecideCommand(
      path, root_controlled ? engine::ProgramOrigin::kRootControlled
                            : engine::ProgramOrigin::kOther);
  // Rule L4: a block the policy written above the tier that set audit makes too is kept.
  bool above_blocks = false;
  if (!decision.allowed()) {
    if (const engine::CompiledPolicy* above = policy.audit_above(SURFACE_COMMANDS)) {
      above_blocks = !above->DecideCommand(path, root_controlled
                                                     ? engine::ProgramOrigin::kRootControlled
                                                     : engine::ProgramOrigin::kOther)
                          .allowed();
    }
  }
  // A program let through under audit loads its interpreter as an allowed one does: the
  // interpreter is part of that exec, not a command of its own to report.
  if (decision.permits() || (policy.audited(SURFACE_COMMANDS) && !above_blocks)) {
    size_t len = 0;
    if (source_.ElfInterpreterOf(event, pending.interp, sizeof(pending.interp) - 1, len) == 0 &&
        len > 0 && pending.interp[0] == '/') {
      pending.interp[len] = '\0';
      pending.interp_len = static_cast<uint16_t>(len);
      pending.program_len = static_cast<uint16_t>(std::min(path.size(), sizeof(pending.program)));
      memcpy(pending.program, path.data(), pending.program_len);
      pending.pid = event.pid;
    }
  }
  Judgement judgement = Judgement::Of(std::move(decision));
  judgement.above_blocks = above_blocks;
  return judgement;
}

bool Watcher::IsPendingInterpreter(const FanEvent& event, const PendingInterpreter& pending,
                                   const FileFacts& facts) {
  // The file the kernel opened is the very file PT_INTERP names from the host's root, by
  // identity, never by name: the exec'ing process's root and mounts are its own to arrange (a
  // chroot, pivot_root or a bind mount in a user namespace of its own puts its own file at the
  // loader's path), and a path string says nothing about which file is behind it.
  uint64_t dev = 0;
  uint64_t ino = 0;
  if (source_.HostIdentityOf(pending.interp, dev, ino) != 0 || dev != facts.dev ||
      ino != facts.ino) {
    return false;
  }
  // And the open is the ELF loader's, in this exec, not a program's own: the same file run
  // directly (`ld.so /usr/bin/curl`) after a failed exec, or by another thread, is not.
  bool loading = false;
  return source_.IsLoadingElfInterpreter(event, loading) == 0 && loading;
}

void Watcher::Log(uint32_t uid, leash::v1::Surface surface, const Decision& decision,
                  absl::string_view path, bool critical, pid_t pid) {
  LogLine(uid, surface, decision.verdict, path, critical,
          [&](std::string& out) { out += decision.reason; }, /*enforced=*/true,
          /*kept_under_audit=*/false, pid);
}

void Watcher::Log(uint32_t uid, leash::v1::Surface surface, const Judgement& judgement,
                  absl::string_view path, pid_t pid) {
  const absl::string_view listing = judgement.directory ? engine::kDirectoryListing : "";
  if (!judgement.ruling) {
    LogLine(uid, surface, judgement.decision.verdict, path, /*critical=*/false,
            [&](std::string& out) { absl::StrAppend(&out, judgement.decision.reason, listing); },
            judgement.enforced, judgement.kept_under_audit, pid);
    return;
  }
  LogLine(uid, surface, judgement.ruling->verdict, path, /*critical=*/false,
          [&](std::string& out) {
            engine::AppendReason(surface, path, *judgement.ruling, out);
            out.append(listing.data(), listing.size());
          },
          judgement.enforced, judgement.kept_under_audit, pid);
}

void Watcher::LogLine(uint32_t uid, leash::v1::Surface surface, Verdict verdict,
                      absl::string_view path, bool critical,
                      absl::FunctionRef<void(std::string&)> append_reason, bool enforced,
                      bool kept_under_audit, pid_t pid) {
  // logging.level and the subject's allow-line limit, before anything is rendered.
  if (!log_.Admits(uid, verdict, critical)) return;
  // engine::MakeDecisionRecord's fields, with the cheaper timestamp, rendered by
  // engine::AppendDecisionLine straight into the slot the log hands over: no record is built
  // and nothing is allocated once the slot's string has grown.
  char ts[kTimestampSize];
  const size_t ts_len = FormatTimestamp(ts);
  const std::string ref = engine::MakeRef(NextRandom());  // 8 characters: no allocation
  // The sink's names of the subjects' accounts (set from each policy map): no lookup here.
  const std::string account = log_.AccountOf(uid);
  engine::FileDecisionFields fields;
  fields.ts = absl::string_view(ts, ts_len);
  fields.ref = ref;
  fields.uid = uid;
  fields.account = account;
  fields.surface = surface;
  fields.verdict = verdict;
  fields.path = path;
  fields.critical = critical;
  fields.enforced = enforced;
  fields.kept_under_audit = kept_under_audit;
  // The acting process, only for a line that is written and after the event was answered
  // (the opener no longer waits on it): a process that has exited since leaves out what
  // could not be read.
  engine::ProcessFields process;
  std::string cmdline;
  RawProcess facts;
  if (pid > 0 && options_.process_facts != nullptr && inspector_ != nullptr) {
    process.pid = static_cast<uint32_t>(pid);
    fields.process = &process;
  }
  if (fields.process != nullptr && TakeProcessRead(uid)) {
    facts = options_.process_facts->Read(pid);
    process.ppid = facts.ppid.value_or(0);
    process.exe = facts.exe;
    cmdline = engine::LoggedCmdline(facts.cmdline, *inspector_);
    process.cmdline = cmdline;
  }
  log_.RecordLine(surface, verdict, [&](std::string& line) {
    engine::AppendDecisionLine(fields, append_reason, line);
  });
}

bool Watcher::TakeProcessRead(uint32_t uid) {
  const int64_t now_ns =
      options_.process_read_clock != nullptr ? options_.process_read_clock() : MonotonicNs();
  absl::MutexLock lock(&process_budget_mu_);
  return process_budget_.Take(uid, now_ns);
}

uint64_t Watcher::NextRandom() {
  // Lock-free and good enough for a ref; called from the loop and from publishers.
  static std::atomic<uint64_t> counter{0};
  return SplitMix64(rng_state_ + counter.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace leash::fswatch
