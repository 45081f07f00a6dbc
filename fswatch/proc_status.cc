#include "fswatch/proc_status.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace leash::fswatch {
namespace {

// Finds "\n<key>" (or <key> at the very start) and returns the index just after it, or -1.
long FindLine(const char* text, size_t len, const char* key) {
  const size_t key_len = strlen(key);
  for (size_t i = 0; i + key_len <= len; ++i) {
    if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, key, key_len) == 0) {
      return static_cast<long>(i + key_len);
    }
  }
  return -1;
}

// Reads `count` whitespace-separated decimal numbers from `at`, up to the end of the line.
bool ReadNumbers(const char* text, size_t len, size_t at, uint32_t* out, int count) {
  for (int n = 0; n < count; ++n) {
    while (at < len && (text[at] == '\t' || text[at] == ' ')) ++at;
    if (at >= len || text[at] < '0' || text[at] > '9') return false;
    uint64_t value = 0;
    while (at < len && text[at] >= '0' && text[at] <= '9') {
      value = value * 10 + static_cast<uint64_t>(text[at] - '0');
      if (value > UINT32_MAX) return false;
      ++at;
    }
    out[n] = static_cast<uint32_t>(value);
  }
  return true;
}

}  // namespace

int ParseProcStatusCreds(const char* text, size_t len, Creds& out) {
  const long uid_at = FindLine(text, len, "Uid:");
  const long gid_at = FindLine(text, len, "Gid:");
  if (uid_at < 0 || gid_at < 0) return EINVAL;
  uint32_t uids[4];
  uint32_t gids[4];
  // Uid: real effective saved filesystem
  if (!ReadNumbers(text, len, static_cast<size_t>(uid_at), uids, 4)) return EINVAL;
  if (!ReadNumbers(text, len, static_cast<size_t>(gid_at), gids, 4)) return EINVAL;
  out.ruid = uids[0];
  out.euid = uids[1];
  out.fsuid = uids[3];
  out.rgid = gids[0];
  return 0;
}

}  // namespace leash::fswatch
