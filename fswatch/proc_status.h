// The fallback identity source: the "Uid:" and "Gid:" lines of /proc/<pid>/status
// (docs/ARCHITECTURE.md, rule F6: the fallback on kernels without PIDFD_GET_INFO). Parsed from
// a fixed buffer without allocating, because the event loop calls it while openers wait.
#pragma once

#include <cstddef>

#include "fswatch/fanotify_source.h"

namespace leash::fswatch {

// Fills `out` from the text of a status file. Returns 0, or EINVAL when the Uid/Gid lines are
// missing or malformed. The process name (the only field its owner chooses) is escaped by the
// kernel and cannot fake a line.
int ParseProcStatusCreds(const char* text, size_t len, Creds& out);

}  // namespace leash::fswatch
