// The values a floor gets for every key it leaves out, and the effective reading of the few
// keys whose raw value is kept (fail_mode). Defaults are the closed reading: whitelist
// surfaces, UDP dropped, every enforcer on, every risky inspection blocking.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "leash/v1/policy.pb.h"

namespace leash::engine {

inline constexpr absl::string_view kDefaultConfigPath = "/etc/leash/leash.yaml";
inline constexpr absl::string_view kDefaultDecisionLog = "/var/log/leash/decisions.jsonl";
inline constexpr uint64_t kDefaultMaxToolInputBytes = 1 << 20;

// The tool-input inspection categories, in report order.
inline constexpr absl::string_view kInspectCategories[] = {"secrets", "pii", "priv_esc"};

enum class FailMode { kClosed, kOpen };

// "open" is open; "closed", an absent value and anything else (a typo) are closed, so a
// misspelling cannot quietly disable an enforcer.
FailMode EffectiveFailMode(const leash::v1::Config& config);

// Whether `fail_mode` is a value validate accepts without a warning.
bool IsKnownFailMode(absl::string_view fail_mode);

// The file `floor` has leashd write its decisions to: its logging.decisions, or the default
// when it names none or names stdout (then there is no file to read).
std::string DecisionLogFile(const leash::v1::Config& floor);

// `config` with every absent field set to its default. The result has every optional scalar
// and every EntryList present.
leash::v1::Config WithDefaults(const leash::v1::Config& config);

}  // namespace leash::engine
