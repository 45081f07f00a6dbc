#include "base/rotated_log.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leash::base {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

constexpr size_t kChunk = 1 << 20;

// Hands out the whole lines of `buffer` from `start`, keeping the rest; false when `on_line`
// asked to stop.
bool SplitLines(std::string& buffer, size_t& start,
                absl::FunctionRef<bool(absl::string_view)> on_line) {
  size_t newline;
  while ((newline = buffer.find('\n', start)) != std::string::npos) {
    const bool more = on_line(absl::string_view(buffer).substr(start, newline - start));
    start = newline + 1;
    if (!more) return false;
  }
  return true;
}

// `read_chunk` fills `into` and returns the bytes read, 0 at the end, or -1 on an error.
template <typename ReadChunk>
absl::Status StreamLines(const std::string& path, ReadChunk read_chunk,
                         absl::FunctionRef<bool(absl::string_view)> on_line) {
  std::string buffer;
  size_t start = 0;  // the first byte of buffer not yet handed out
  std::vector<char> chunk(kChunk);
  while (true) {
    const long got = read_chunk(chunk.data(), chunk.size());
    if (got < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
    if (got == 0) break;
    buffer.erase(0, start);
    start = 0;
    buffer.append(chunk.data(), static_cast<size_t>(got));
    if (!SplitLines(buffer, start, on_line)) return absl::OkStatus();
  }
  // A last line without '\n' (a writer caught mid-line) is handed out as it is.
  if (start < buffer.size()) on_line(absl::string_view(buffer).substr(start));
  return absl::OkStatus();
}

}  // namespace

std::vector<LogFile> LogRotations(const std::string& path) {
  std::vector<LogFile> files;
  for (int n = 1;; ++n) {
    const std::string plain = absl::StrCat(path, ".", n);
    const std::string gz = absl::StrCat(plain, ".gz");
    if (Exists(plain)) {
      files.push_back({plain, false});
    } else if (Exists(gz)) {
      files.push_back({gz, true});
    } else {
      break;
    }
  }
  std::reverse(files.begin(), files.end());
  if (Exists(path)) files.push_back({path, absl::EndsWith(path, ".gz")});
  return files;
}

absl::Status ReadLogLines(const LogFile& file,
                          absl::FunctionRef<bool(absl::string_view)> on_line) {
  const int fd = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", file.path));
  if (!file.compressed) {
    absl::Status status = StreamLines(
        file.path,
        [fd](char* into, size_t size) -> long {
          for (;;) {
            const ssize_t got = read(fd, into, size);
            if (got < 0 && errno == EINTR) continue;
            return static_cast<long>(got);
          }
        },
        on_line);
    close(fd);
    return status;
  }
  // gzdopen takes the descriptor over (gzclose closes it).
  gzFile gz = gzdopen(fd, "rb");
  if (gz == nullptr) {
    close(fd);
    return absl::ResourceExhaustedError(absl::StrCat("cannot read ", file.path, ": out of memory"));
  }
  gzbuffer(gz, 256 * 1024);
  std::string gz_error;
  absl::Status status = StreamLines(
      file.path,
      [gz, &gz_error](char* into, size_t size) -> long {
        const int got = gzread(gz, into, static_cast<unsigned>(size));
        if (got < 0) {
          int code = 0;
          gz_error = gzerror(gz, &code);
          if (code != Z_ERRNO) errno = EIO;
          return -1;
        }
        return got;
      },
      on_line);
  // zlib reads a file that is not gzip as it is ("transparent"); a rotation named .gz that is
  // not gzip is still read, and a cut-short one is an error (Z_BUF_ERROR at its end).
  int code = Z_OK;
  const char* after = gzerror(gz, &code);
  if (status.ok() && code != Z_OK && code != Z_STREAM_END) gz_error = after;
  gzclose(gz);
  if (!gz_error.empty()) {
    return absl::DataLossError(
        absl::StrCat("cannot read the compressed log ", file.path, ": ", gz_error));
  }
  return status;
}

size_t FirstFileReaching(const std::vector<LogFile>& files, absl::Time since,
                         absl::FunctionRef<std::optional<absl::Time>(absl::string_view)> stamp_of) {
  for (size_t i = files.size(); i-- > 1;) {
    std::optional<absl::Time> first;
    ReadLogLines(files[i], [&](absl::string_view line) {
      first = stamp_of(line);
      return !first.has_value();
    }).IgnoreError();
    if (first.has_value() && *first <= since - kLogStampDisorder) return i;
  }
  return 0;
}

}  // namespace leash::base
