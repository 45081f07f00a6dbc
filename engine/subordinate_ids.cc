#include "engine/subordinate_ids.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace leash::engine {
namespace {

// shadow's commonio reads with buffers of this many bytes, grown by as many.
constexpr size_t kReadChunk = 4096;
// subordinate_parse refuses a line this long or longer.
constexpr size_t kLongestLine = 1023;

struct RawLine {
  int number = 0;  // of the file's line where it starts
  std::string text;
};

// The lines commonio_open hands to subordinate_parse, from fgets into a buffer used as a C
// string: a NUL byte ends the line for strlen, and the next fgets writes from there, joining
// what follows. nullopt where commonio_open fails (an fgets that finds nothing after a buffer
// filled without a newline): newuidmap then reads no range at all.
std::optional<std::vector<RawLine>> CommonioLines(absl::string_view text) {
  std::vector<RawLine> lines;
  size_t pos = 0;
  bool eof = false;
  size_t buffer_size = kReadChunk;
  std::string buffer;
  auto c_string = [&]() {
    return absl::string_view(buffer.data(), std::min(buffer.find('\0'), buffer.size()));
  };
  // fgets(buffer + offset, size): at most size - 1 bytes, up to and including a newline.
  auto fgets = [&](size_t offset, size_t size) {
    if (pos >= text.size()) {
      eof = true;
      return false;
    }
    buffer.resize(offset);
    for (size_t taken = 0; taken + 1 < size; ++taken) {
      if (pos >= text.size()) {
        eof = true;
        break;
      }
      const char c = text[pos++];
      buffer.push_back(c);
      if (c == '\n') break;
    }
    return true;
  };
  int number = 1;
  size_t start = 0;
  while (fgets(0, buffer_size)) {
    while (c_string().find('\n') == absl::string_view::npos && !eof) {
      buffer_size += kReadChunk;
      const size_t length = c_string().size();
      if (!fgets(length, buffer_size - length)) return std::nullopt;
    }
    absl::string_view line = c_string();
    if (const size_t newline = line.rfind('\n'); newline != absl::string_view::npos) {
      line = line.substr(0, newline);
    }
    lines.push_back({number, std::string(line)});
    for (; start < pos; ++start) number += text[start] == '\n' ? 1 : 0;
  }
  return lines;
}

}  // namespace

std::optional<uint64_t> ReadSubidNumber(absl::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  // isspace in the C locale, and any byte a single-byte locale might call a space.
  auto space = [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c >= 0x80;
  };
  while (i < text.size() && space(static_cast<unsigned char>(text[i]))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    negative = text[i] == '-';
    ++i;
  }
  uint64_t base = 10;
  if (i < text.size() && text[i] == '0') {
    if (i + 2 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X') &&
        absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      base = 16;
      i += 2;
    } else {
      base = 8;
    }
  }
  const size_t first_digit = i;
  uint64_t value = 0;
  bool overflow = false;
  for (; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    uint64_t digit;
    if (absl::ascii_isdigit(c)) {
      digit = c - '0';
    } else if (absl::ascii_isalpha(c)) {
      digit = absl::ascii_tolower(c) - 'a' + 10;
    } else {
      break;
    }
    if (digit >= base) break;
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / base) overflow = true;
    value = value * base + digit;
  }
  // No digit (strtoul's end is the text's start), something after the number, or ERANGE.
  if (i == first_digit || i != text.size() || overflow) return std::nullopt;
  return negative ? 0 - value : value;
}

SubordinateIdFile ParseSubordinateIds(absl::string_view text, const std::string& path) {
  SubordinateIdFile file;
  file.path = path;
  std::optional<std::vector<RawLine>> lines = CommonioLines(text);
  if (!lines) {
    file.ignored.push_back({0, "", "newuidmap's reader fails on this file (a line without a "
                                   "newline fills its buffer at the end), so it reads no range"});
    return file;
  }
  for (const RawLine& raw : *lines) {
    const absl::string_view line = raw.text;
    auto ignore = [&](absl::string_view owner, absl::string_view why) {
      file.ignored.push_back({raw.number, std::string(owner), std::string(why)});
    };
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 3));
    const absl::string_view owner = fields.front();
    if (line.size() > kLongestLine) {
      ignore(owner, "it is 1024 bytes or longer");
      continue;
    }
    if (!line.empty() && (line.front() == '+' || line.front() == '-')) {
      ignore(owner, "it starts with + or -, a NIS entry");
      continue;
    }
    if (fields.size() < 3) {
      ignore(owner, "it has fewer than three fields owner:first:count");
      continue;
    }
    if (owner.empty() || fields[1].empty() || fields[2].empty()) {
      ignore(owner, "one of its three fields is empty");
      continue;
    }
    const std::optional<uint64_t> first = ReadSubidNumber(fields[1]);
    const std::optional<uint64_t> count = ReadSubidNumber(fields[2]);
    if (!first || !count) {
      ignore(owner, "its first or count is not a number strtoul reads whole");
      continue;
    }
    // find_range's arithmetic: unsigned long, wrapping.
    const uint64_t last = *first + *count - 1;
    constexpr uint64_t kLastId = std::numeric_limits<uint32_t>::max();
    if (*first > last || *first > kLastId) {
      ignore(owner, "the range it names holds no 32-bit ID");
      continue;
    }
    SubordinateIdFile::Entry entry;
    entry.line = raw.number;
    entry.owner = std::string(owner);
    entry.range = {static_cast<uint32_t>(*first), static_cast<uint32_t>(std::min(last, kLastId))};
    const bool plain = fields.size() == 3 && fields[1] == absl::StrCat(*first) &&
                       fields[2] == absl::StrCat(*count) && *count > 0 && last <= kLastId;
    if (!plain) {
      entry.reading = absl::StrCat("written \"", line.substr(owner.size() + 1),
                                   "\", which newuidmap reads as ",
                                   FormatUidRange(entry.range));
    }
    file.entries.push_back(std::move(entry));
  }
  return file;
}

std::vector<UidRange> SubordinateIdFile::RangesOf(OwnerTest owns) const {
  std::vector<UidRange> ranges;
  for (const Entry& entry : entries) {
    if (owns(entry.owner)) ranges.push_back(entry.range);
  }
  return MergeUidRanges(std::move(ranges));
}

std::vector<UidRange> SubordinateIdFile::RangesOf(absl::string_view name,
                                                          uint32_t id) const {
  const std::string number = absl::StrCat(id);
  return RangesOf([&](absl::string_view owner) { return owner == name || owner == number; });
}

std::vector<std::string> SubordinateIdFile::NotesOf(OwnerTest owns) const {
  std::vector<std::string> notes;
  for (const Entry& entry : entries) {
    if (!owns(entry.owner) || entry.reading.empty()) continue;
    notes.push_back(absl::StrCat("line ", entry.line, " of ", path, " ", entry.reading));
  }
  for (const IgnoredLine& line : ignored) {
    if (line.line != 0 && !owns(line.owner)) continue;
    notes.push_back(absl::StrCat(line.line == 0 ? "" : absl::StrCat("line ", line.line, " of "),
                                 path, line.line == 0 ? ": " : " names it, but ", line.why,
                                 line.line == 0 ? "" : ": newuidmap ignores the line, it grants nothing"));
  }
  return notes;
}

std::vector<std::string> SubordinateIdFile::OverlapsWithOthers(
    OwnerTest owns, const std::vector<UidRange>& ranges) const {
  std::vector<std::string> overlaps;
  for (const Entry& entry : entries) {
    if (owns(entry.owner)) continue;
    for (const UidRange& mine : ranges) {
      if (!mine.Overlaps(entry.range)) continue;
      overlaps.push_back(absl::StrCat(
          path, " gives ", FormatUidRange(entry.range), " to ", entry.owner,
          " too: inside a user namespace each could act as the other's IDs ",
          FormatUidRange(mine), "; give them disjoint ranges"));
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

}  // namespace leash::engine
