#include "proto/sidecar/decision_line_gate.h"

#include <algorithm>

namespace leash::sidecar {
namespace {

// Subjects a process tells apart; more share the last slot (and its limit). A process holds
// one slot per UID it has logged for, and subjects are leashed accounts, not arbitrary UIDs.
constexpr uint32_t kSlots = 8192;
constexpr uint32_t kEmpty = 0;  // keys are uid + 1, so that uid 0 has a key too

}  // namespace

struct DecisionLineGate::Slot {
  std::atomic<uint64_t> key{kEmpty};
  std::atomic<uint8_t> level{static_cast<uint8_t>(LogLevel::kEveryDecision)};
  // The GCRA "theoretical arrival time": a line at `now` is allowed while tat - now <= the
  // burst's worth, and moves tat one interval on from max(tat, now).
  std::atomic<int64_t> tat_ns{0};
  std::atomic<uint64_t> suppressed{0};
  std::atomic<int64_t> first_suppressed_ns{0};
  std::atomic<int64_t> last_suppressed_ns{0};
};

absl::optional<LogLevel> ParseLogLevel(absl::string_view level) {
  if (level == "debug" || level == "info") return LogLevel::kEveryDecision;
  if (level == "warning") return LogLevel::kBlocksAndCriticals;
  if (level == "error" || level == "critical") return LogLevel::kCriticalsOnly;
  return absl::nullopt;
}

LogLevel LevelOf(const engine::CompiledPolicy* policy) {
  if (policy == nullptr) return LogLevel::kEveryDecision;
  return ParseLogLevel(policy->config().logging().level()).value_or(LogLevel::kEveryDecision);
}

DecisionLineGate::DecisionLineGate(Limits limits)
    : limits_(limits),
      interval_ns_(1'000'000'000 / std::max<uint32_t>(limits.allow_lines_per_second, 1)),
      tolerance_ns_(interval_ns_ * (std::max<int64_t>(limits.allow_burst, 1) - 1)),
      slots_(new Slot[kSlots]) {}

DecisionLineGate::~DecisionLineGate() = default;

DecisionLineGate::Slot* DecisionLineGate::Find(uint32_t uid) {
  const uint64_t key = uint64_t{uid} + 1;
  // Open addressing, linear probing; a slot is claimed once and never freed, so a lookup never
  // races with a removal.
  uint32_t index = static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 40) % (kSlots - 1);
  for (uint32_t probes = 0; probes < kSlots - 1; ++probes, index = (index + 1) % (kSlots - 1)) {
    Slot& slot = slots_[index];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == key) return &slot;
    if (seen == kEmpty) {
      if (slot.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) return &slot;
      if (seen == key) return &slot;
    }
  }
  return &slots_[kSlots - 1];  // full: the rest share one slot
}

void DecisionLineGate::SetLevel(uint32_t uid, LogLevel level) {
  Find(uid)->level.store(static_cast<uint8_t>(level), std::memory_order_relaxed);
}

bool DecisionLineGate::Admit(uint32_t uid, LineKind kind, int64_t now_ns) {
  if (kind == LineKind::kCritical) return true;
  Slot* slot = Find(uid);
  const auto level = static_cast<LogLevel>(slot->level.load(std::memory_order_relaxed));
  if (kind == LineKind::kBlock) return level != LogLevel::kCriticalsOnly;
  if (level != LogLevel::kEveryDecision) return false;
  int64_t tat = slot->tat_ns.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t base = tat > now_ns ? tat : now_ns;
    if (base - now_ns > tolerance_ns_) break;
    if (slot->tat_ns.compare_exchange_weak(tat, base + interval_ns_,
                                           std::memory_order_relaxed)) {
      return true;
    }
  }
  if (slot->suppressed.fetch_add(1, std::memory_order_relaxed) == 0) {
    int64_t zero = 0;
    slot->first_suppressed_ns.compare_exchange_strong(zero, now_ns, std::memory_order_relaxed);
  }
  slot->last_suppressed_ns.store(now_ns, std::memory_order_relaxed);
  if (!any_suppressed_.load(std::memory_order_relaxed)) {
    any_suppressed_.store(true, std::memory_order_relaxed);
  }
  return false;
}

void DecisionLineGate::TakeSuppressed(absl::FunctionRef<void(const Suppressed&)> report) {
  if (!any_suppressed_.exchange(false, std::memory_order_relaxed)) return;
  for (uint32_t i = 0; i < kSlots; ++i) {
    Slot& slot = slots_[i];
    const uint64_t key = slot.key.load(std::memory_order_acquire);
    const bool overflow = i == kSlots - 1;  // shared by UIDs past the table's size
    if ((key == kEmpty && !overflow) || slot.suppressed.load(std::memory_order_relaxed) == 0) {
      continue;
    }
    Suppressed out;
    out.uid = overflow ? 0xFFFFFFFFu : static_cast<uint32_t>(key - 1);
    out.lines = slot.suppressed.exchange(0, std::memory_order_relaxed);
    out.last_ns = slot.last_suppressed_ns.load(std::memory_order_relaxed);
    out.first_ns = slot.first_suppressed_ns.exchange(0, std::memory_order_relaxed);
    if (out.first_ns == 0 || out.first_ns > out.last_ns) out.first_ns = out.last_ns;
    if (out.lines > 0) report(out);
  }
}

}  // namespace leash::sidecar
