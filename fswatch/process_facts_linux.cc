#include "fswatch/process_facts_linux.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace leash::fswatch {
namespace {

// At most `max` bytes of `path` into `out`; empty when it cannot be opened (the process has
// gone). A /proc file of a live or dead process answers at once: no read here can hang.
void ReadBounded(const std::string& path, size_t max, std::string& out) {
  out.clear();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  out.resize(max);
  size_t got = 0;
  while (got < max) {
    const ssize_t n = read(fd, out.data() + got, max - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
}

}  // namespace

std::optional<uint32_t> ParseStatPpid(absl::string_view stat) {
  const size_t close_paren = stat.rfind(')');
  if (close_paren == absl::string_view::npos) return std::nullopt;
  // ") S 1234 ...": the state, then the ppid.
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close_paren + 1), ' ', absl::SkipEmpty());
  uint32_t ppid = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &ppid)) return std::nullopt;
  return ppid;
}

RawProcess LinuxProcessFacts::Read(pid_t pid) const {
  RawProcess out;
  if (pid <= 0) return out;
  const std::string dir = absl::StrCat("/proc/", pid, "/");
  char exe[PATH_MAX];
  const ssize_t len = readlink((dir + "exe").c_str(), exe, sizeof(exe));
  if (len > 0) out.exe.assign(exe, static_cast<size_t>(len));
  ReadBounded(dir + "cmdline", kCmdlineReadBytes, out.cmdline);
  std::string stat;
  // The name is at most 64 bytes; the ppid is the fourth field: 256 bytes hold it.
  ReadBounded(dir + "stat", 256, stat);
  out.ppid = ParseStatPpid(stat);
  return out;
}

}  // namespace leash::fswatch
