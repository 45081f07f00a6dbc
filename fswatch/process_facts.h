// What a decision line says of the acting process: read from /proc by the pid fanotify
// reports, only for a line that is written, after the event has been answered.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace leash::fswatch {

// The facts as read; what could not be read (the process has exited) is left empty.
struct RawProcess {
  std::optional<uint32_t> ppid;
  std::string exe;
  // /proc/<pid>/cmdline's bytes as read (NUL-terminated arguments), at most kCmdlineReadBytes.
  std::string cmdline;
};

// How much of a command line is read: more than the line keeps (engine/process_cmdline.h,
// kMaxCmdlineBytes), so a secret across the line's bound is still masked; a bound so the read
// stays small whatever the agent passes.
inline constexpr size_t kCmdlineReadBytes = 4096;

// The kernel interface. Thread-safe; never blocks beyond a read of a /proc file.
class ProcessFacts {
 public:
  virtual ~ProcessFacts() = default;
  // The facts of `pid`; empty fields for what cannot be read, never a failure.
  virtual RawProcess Read(pid_t pid) const = 0;
};

}  // namespace leash::fswatch
