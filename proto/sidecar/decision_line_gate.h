// Which decision lines a writer process (leash-fswatch, leash-proxy, leashd's tools service)
// writes: the subject's logging.level, and a per-subject limit on allow lines so that one agent
// cannot fill the disk through the log by opening or connecting in a loop.
//
// logging.level, as every writer applies it:
//   debug, info     every decision
//   warning         blocks and criticals; no allow lines
//   error, critical criticals only (a plain block's ref then has no line to point to)
// Blocks and criticals are never rate-limited. Allow lines are limited per subject UID by a
// token bucket (kept as one atomic "theoretical arrival time", the GCRA form of a token bucket,
// so the watcher's hot path takes no lock and allocates nothing); what is held back is counted
// and reported as a "suppressed" record naming the subject, the count and the time span.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "engine/compiled_policy.h"

namespace leash::sidecar {

enum class LogLevel : uint8_t {
  kEveryDecision = 0,       // debug, info
  kBlocksAndCriticals = 1,  // warning
  kCriticalsOnly = 2,       // error, critical
};

// The level logging.level names; nullopt for anything else (config_yaml refuses those).
absl::optional<LogLevel> ParseLogLevel(absl::string_view level);

// A subject's level from its resolved policy (logging.level, which a profile may set); a
// subject with no policy writes every decision (its lines are blocks and criticals).
LogLevel LevelOf(const engine::CompiledPolicy* policy);

enum class LineKind : uint8_t { kAllow, kBlock, kCritical };

class DecisionLineGate {
 public:
  struct Limits {
    // Allow lines a subject may write per second, sustained, and in one burst.
    uint32_t allow_lines_per_second = 100;
    uint32_t allow_burst = 2000;
  };
  // A subject's held-back allow lines, as the writer reports them.
  struct Suppressed {
    uint32_t uid = 0;
    uint64_t lines = 0;
    int64_t first_ns = 0;  // CLOCK_REALTIME of the first and last line held back
    int64_t last_ns = 0;
  };

  explicit DecisionLineGate(Limits limits);
  ~DecisionLineGate();

  // The level for `uid`'s lines from now on. Thread-safe; called on each policy map.
  void SetLevel(uint32_t uid, LogLevel level);

  // Whether `uid`'s line of `kind` is written at `now_ns` (CLOCK_REALTIME). Counts an allow line
  // held back by the limit. Lock-free and allocation-free; thread-safe.
  bool Admit(uint32_t uid, LineKind kind, int64_t now_ns);

  // Hands over, and resets, every subject's count of held-back allow lines (writer thread).
  void TakeSuppressed(absl::FunctionRef<void(const Suppressed&)> report);

  const Limits& limits() const { return limits_; }

 private:
  struct Slot;
  Slot* Find(uint32_t uid);

  const Limits limits_;
  const int64_t interval_ns_;   // one allow line's worth of time
  const int64_t tolerance_ns_;  // how far ahead of now a burst may run: (burst - 1) lines
  std::unique_ptr<Slot[]> slots_;
  std::atomic<bool> any_suppressed_{false};
};

}  // namespace leash::sidecar
