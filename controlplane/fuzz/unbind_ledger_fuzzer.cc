// Fuzz target: the unbind ledger (unbinds.jsonl). Any content parses into records and reported
// problems — never a crash — with nothing skipped silently, and every record read formats and
// reads back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "controlplane/unbind_ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string content(reinterpret_cast<const char*>(data), size);
  const leash::controlplane::LedgerContents ledger = leash::controlplane::ParseLedger(content);
  // Every line is either a record or a problem.
  size_t lines = 0;
  for (char c : content) lines += c == '\n';
  if (ledger.torn_tail) ++lines;
  if (ledger.records.size() + ledger.problems.size() != lines) std::abort();
  if (ledger.torn_tail != (!content.empty() && content.back() != '\n')) std::abort();
  for (const leash::controlplane::UnbindRecord& record : ledger.records) {
    std::string line = leash::controlplane::FormatUnbindRecord(record);
    line.pop_back();
    absl::StatusOr<leash::controlplane::UnbindRecord> back =
        leash::controlplane::ParseUnbindRecord(line);
    if (!back.ok() || !(*back == record)) std::abort();
  }
  return 0;
}
