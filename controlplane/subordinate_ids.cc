#include "controlplane/subordinate_ids.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controlplane/atomic_file.h"

namespace leash::controlplane {
namespace {

// A plain decimal number, as useradd writes it. Anything else (hex, octal, signs, spaces)
// newuidmap may or may not accept, so it is not guessed at: the line is reported.
bool ParseDecimal(absl::string_view text, uint64_t& value) {
  if (text.empty() || text.size() > 10) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, &value);
}

bool OwnerMatches(absl::string_view owner, absl::string_view name, uint32_t id) {
  return owner == name || owner == absl::StrCat(id);
}

}  // namespace

SubordinateIdFile ParseSubordinateIds(absl::string_view text, const std::string& path) {
  SubordinateIdFile file;
  file.path = path;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty() || line.front() == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ':');
    const std::string owner(fields.front());
    if (fields.size() != 3) {
      file.bad_lines.push_back({number, owner, "it has not the three fields owner:first:count"});
      continue;
    }
    uint64_t first = 0, count = 0;
    if (!ParseDecimal(fields[1], first) || !ParseDecimal(fields[2], count)) {
      file.bad_lines.push_back({number, owner, "its first or count is not a plain decimal number"});
      continue;
    }
    if (count == 0) continue;  // grants nothing
    if (first + count - 1 > UINT32_MAX) {
      file.bad_lines.push_back({number, owner, "its range runs past the last UID (4294967295)"});
      continue;
    }
    file.entries.push_back(
        {owner, {static_cast<uint32_t>(first), static_cast<uint32_t>(first + count - 1)}});
  }
  return file;
}

std::vector<engine::UidRange> SubordinateIdFile::RangesOf(absl::string_view name,
                                                          uint32_t id) const {
  std::vector<engine::UidRange> ranges;
  for (const Entry& entry : entries) {
    if (OwnerMatches(entry.owner, name, id)) ranges.push_back(entry.range);
  }
  return engine::MergeUidRanges(std::move(ranges));
}

std::vector<std::string> SubordinateIdFile::ProblemsOf(absl::string_view name, uint32_t id) const {
  std::vector<std::string> problems;
  for (const BadLine& bad : bad_lines) {
    if (!OwnerMatches(bad.owner, name, id)) continue;
    problems.push_back(absl::StrCat("line ", bad.line, " of ", path, " names it but cannot be read (",
                                    bad.why, "), so which host UIDs it can run as is not known; "
                                    "fix or remove that line"));
  }
  return problems;
}

absl::StatusOr<SubordinateIdFile> ReadSubordinateIds(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (absl::IsNotFound(text.status())) return ParseSubordinateIds("", path);
  if (!text.ok()) return text.status();
  return ParseSubordinateIds(*text, path);
}

}  // namespace leash::controlplane
