// A log file and the rotations logrotate keeps of it: `<path>.1` (plain, or `.gz`), `<path>.2`
// and older (compressed, `.gz`, unless the rotation does not compress), read as one stream of
// lines, oldest first. Leash ships such a rotation for its decision log
// (packaging/logrotate.d/leash: copytruncate, compress, delaycompress), and both leashd's replay
// and `leash suggest` read back across it.
//
// With copytruncate, `<path>.1` holds every line up to the copy and `<path>` every line after
// the truncate, so reading the files in that order gives each line once and in order.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leash::base {

struct LogFile {
  std::string path;
  // A gzip file (its name ends in ".gz"), read through zlib.
  bool compressed = false;
};

// The rotations of `path` that exist, oldest first (`<path>.N[.gz]` for N counting up from 1
// until neither name exists), then `path` itself when it exists.
std::vector<LogFile> LogRotations(const std::string& path);

// Calls `on_line` with every line of `file` (without its '\n'; a last line without one too),
// until it returns false. Reads in large chunks. Errors name the file: one that cannot be
// opened or read, or a compressed one whose data is not gzip or is cut short.
absl::Status ReadLogLines(const LogFile& file,
                          absl::FunctionRef<bool(absl::string_view)> on_line);

// Lines from several writers reach the log in batches, so their stamps are in order only to
// within a batch: a file is taken as the start of a read back to a point in time only when its
// first stamp is at least this much older than that point.
inline constexpr absl::Duration kLogStampDisorder = absl::Minutes(1);

// Where a read of `files` (oldest first) that must reach back to `since` starts: the newest file
// whose first stamp (`stamp_of` a line; nullopt for a line without one) is at least
// kLogStampDisorder older than `since`, else the oldest (0). Older files are not read.
size_t FirstFileReaching(const std::vector<LogFile>& files, absl::Time since,
                         absl::FunctionRef<std::optional<absl::Time>(absl::string_view)> stamp_of);

}  // namespace leash::base
