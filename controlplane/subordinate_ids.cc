#include "controlplane/subordinate_ids.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/atomic_file.h"
#include "base/read_file.h"

namespace leash::controlplane {
namespace {

// A plain decimal number, as useradd writes it. Anything else (hex, octal, signs, spaces, a
// leading zero, which newuidmap reads as octal) it may read otherwise, so it is not guessed at:
// the line is reported.
bool ParseDecimal(absl::string_view text, uint64_t& value) {
  if (text.empty() || text.size() > 10 || (text.size() > 1 && text.front() == '0')) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, &value);
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

std::vector<engine::UidRange> SubordinateIdFile::RangesOf(OwnerTest owns) const {
  std::vector<engine::UidRange> ranges;
  for (const Entry& entry : entries) {
    if (owns(entry.owner)) ranges.push_back(entry.range);
  }
  return engine::MergeUidRanges(std::move(ranges));
}

std::vector<engine::UidRange> SubordinateIdFile::RangesOf(absl::string_view name,
                                                          uint32_t id) const {
  const std::string number = absl::StrCat(id);
  return RangesOf([&](absl::string_view owner) { return owner == name || owner == number; });
}

std::vector<std::string> SubordinateIdFile::ProblemsOf(OwnerTest owns) const {
  std::vector<std::string> problems;
  for (const BadLine& bad : bad_lines) {
    if (!owns(bad.owner)) continue;
    problems.push_back(absl::StrCat("line ", bad.line, " of ", path, " names it but cannot be read (",
                                    bad.why, "), so which host IDs it can run as is not known; "
                                    "fix or remove that line"));
  }
  return problems;
}

std::vector<std::string> SubordinateIdFile::OverlapsWithOthers(
    OwnerTest owns, const std::vector<engine::UidRange>& ranges) const {
  std::vector<std::string> overlaps;
  for (const Entry& entry : entries) {
    if (owns(entry.owner)) continue;
    for (const engine::UidRange& mine : ranges) {
      if (!mine.Overlaps(entry.range)) continue;
      overlaps.push_back(absl::StrCat(
          path, " gives ", engine::FormatUidRange(entry.range), " to ", entry.owner,
          " too: inside a user namespace each could act as the other's IDs ",
          engine::FormatUidRange(mine), "; give them disjoint ranges"));
      break;
    }
  }
  return overlaps;
}

bool OwnerIsAccount(absl::string_view owner, absl::string_view login_name, uint32_t uid,
                    absl::FunctionRef<std::optional<uint32_t>(absl::string_view)> uid_of_name) {
  if (owner == login_name || owner == absl::StrCat(uid)) return true;
  const std::optional<uint32_t> named = uid_of_name(owner);
  return named.has_value() && *named == uid;
}

std::vector<std::string> NonFileSubidSources(absl::string_view nsswitch_text) {
  std::vector<std::string> sources;
  for (absl::string_view line : absl::StrSplit(nsswitch_text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "subid:")) continue;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    for (absl::string_view source : absl::StrSplit(line, ' ', absl::SkipWhitespace())) {
      if (source != "files" && source.front() != '[') sources.emplace_back(source);  // [..] is an action
    }
  }
  return sources;
}

absl::StatusOr<SubordinateIdFile> ReadSubordinateIds(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (absl::IsNotFound(text.status())) return ParseSubordinateIds("", path);
  if (!text.ok()) return text.status();
  return ParseSubordinateIds(*text, path);
}

}  // namespace leash::controlplane
