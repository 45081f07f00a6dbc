// ProcessFacts from /proc/<pid>/exe, /proc/<pid>/cmdline and /proc/<pid>/stat.
#pragma once

#include <cstddef>
#include <optional>

#include "absl/strings/string_view.h"
#include "fswatch/process_facts.h"

namespace leash::fswatch {

class LinuxProcessFacts final : public ProcessFacts {
 public:
  RawProcess Read(pid_t pid) const override;
};

// The ppid field of a /proc/<pid>/stat text (after the name in parentheses, which the
// process chooses and may hold ')' and spaces: the last ')' ends it). Empty if malformed.
std::optional<uint32_t> ParseStatPpid(absl::string_view stat);

}  // namespace leash::fswatch
