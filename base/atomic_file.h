// Writing the files leashd owns so that a crash at any instant leaves either the old content
// or the new, never a mix: temp file in the same folder, write, fsync, rename over the target,
// fsync the folder. Every step passes a named fault point, so crash-consistency tests can kill
// a writer at each one.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leash::base {

// Atomically replaces `path` with `content` (mode `mode`, owner unchanged: the writer's).
// Errors carry the errno text and the path. On error the target is untouched and the temp
// file is removed.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content,
                                 mode_t mode = 0644);

// Appends `line` to `path` (created with `mode` if absent) with one write(2) on an O_APPEND
// descriptor, then fsyncs the file (and the folder when the file was created).
absl::Status AppendAndSync(const std::string& path, absl::string_view line, mode_t mode = 0644);

// Removes `path` and fsyncs its folder, so the removal survives a crash. NotFound when it does
// not exist; other errors carry errno and path.
absl::Status RemoveFileDurably(const std::string& path);

// fsyncs a directory (after a rename or unlink in it).
absl::Status SyncDirectory(const std::string& dir);

// Test hook: called with a step name before each step of the writes above ("open-temp",
// "write-temp", "fsync-temp", "rename", "fsync-dir", "append", "fsync-append", "unlink").
// A crash test installs a hook that kills the process at its Nth call. Not thread-safe to
// change while writes run; null (the default) costs nothing.
using WriteFaultHook = std::function<void(absl::string_view step, const std::string& path)>;
void SetWriteFaultHookForTesting(WriteFaultHook hook);
void CallWriteFaultHook(absl::string_view step, const std::string& path);

}  // namespace leash::base
