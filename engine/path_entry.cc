#include "engine/path_entry.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "re2/re2.h"

namespace leash::engine {
namespace {

absl::Status Inert(absl::string_view reason) {
  return absl::InvalidArgumentError(std::string(reason));
}

bool HasWhitespaceOrNul(absl::string_view text) {
  for (char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '\0') return true;
  }
  return false;
}

// Checks an absolute entry's segments and returns it with repeated/trailing '/' removed.
absl::StatusOr<std::string> CleanAbsoluteEntry(absl::string_view entry) {
  std::vector<absl::string_view> segments;
  for (absl::string_view segment : absl::StrSplit(entry, '/', absl::SkipEmpty())) {
    if (segment == "." || segment == "..") {
      return Inert(absl::StrCat("contains a '", segment,
                                "' segment; decisions are made on resolved paths, so write the "
                                "path it resolves to"));
    }
    segments.push_back(segment);
  }
  return absl::StrCat("/", absl::StrJoin(segments, "/"));
}

// Checks that every '[' opens a class that closes.
absl::Status CheckBrackets(absl::string_view glob) {
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] != '[') continue;
    size_t j = i + 1;
    if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
    if (j < glob.size() && glob[j] == ']') ++j;  // "[]abc]": a leading ']' is literal
    while (j < glob.size() && glob[j] != ']') {
      if (glob[j] == '/') return Inert("a '[...]' class cannot contain '/'");
      ++j;
    }
    if (j >= glob.size()) return Inert("'[' without a closing ']'");
    i = j;
  }
  return absl::OkStatus();
}

}  // namespace

bool HasGlobMeta(absl::string_view text) {
  return text.find_first_of("*?[") != absl::string_view::npos;
}

bool IsNormalAbsolutePath(absl::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  if (path.size() == 1) return true;  // "/"
  if (path.back() == '/') return false;
  // Every segment between slashes is non-empty and neither "." nor "..".
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == absl::string_view::npos) end = path.size();
    const absl::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = end + 1;
  }
  return true;
}

absl::StatusOr<std::string> NormalizeAbsolutePath(absl::string_view path) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not an absolute path"));
  }
  // One pass into one string: a segment is appended after a '/', ".." cuts back to the
  // previous '/', "." and empty segments are dropped.
  std::string out;
  out.reserve(path.size());
  for (absl::string_view segment : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (segment == ".") continue;
    if (segment == "..") {
      const size_t slash = out.rfind('/');
      out.resize(slash == std::string::npos ? 0 : slash);
      continue;
    }
    out += '/';
    out.append(segment.data(), segment.size());
  }
  if (out.empty()) out = "/";
  return out;
}

absl::StatusOr<PathEntry> ParsePathEntry(absl::string_view entry) {
  if (entry.empty()) return Inert("empty entry");
  if (HasWhitespaceOrNul(entry.substr(0, 1)) || HasWhitespaceOrNul(entry.substr(entry.size() - 1))) {
    return Inert("leading or trailing whitespace");
  }
  if (absl::StrContains(entry, '\0')) return Inert("contains a NUL byte");
  if (entry.front() == '~') {
    return Inert("'~' is not expanded; write the absolute path (e.g. /home/fido/work)");
  }
  if (entry.front() != '/') {
    return Inert("a relative path; write the absolute path (decisions see absolute paths)");
  }
  PathEntry parsed;
  absl::StatusOr<std::string> cleaned = CleanAbsoluteEntry(entry);
  if (!cleaned.ok()) return cleaned.status();
  parsed.path = *std::move(cleaned);
  if (HasGlobMeta(parsed.path)) {
    absl::Status brackets = CheckBrackets(parsed.path);
    if (!brackets.ok()) return brackets;
    RE2::Options options;
    options.set_log_errors(false);
    RE2 regex(GlobToRegex(parsed.path), options);
    if (!regex.ok()) return Inert(absl::StrCat("not a valid pattern: ", regex.error()));
    parsed.kind = PathEntry::Kind::kGlob;
  }
  return parsed;
}

absl::StatusOr<CommandEntry> ParseCommandEntry(absl::string_view entry) {
  if (entry.empty()) return Inert("empty entry");
  if (entry.front() == '@') {
    // Not a binary named "@system": a subject could give its own copy that name.
    return Inert("a list (@name) can be used only in network and filesystem lists; name each "
                 "command on its own");
  }
  if (HasWhitespaceOrNul(entry)) {
    return Inert("contains whitespace; a command entry is a binary's name or absolute path, "
                 "not a command line");
  }
  if (HasGlobMeta(entry)) {
    return Inert("commands match a binary's name or path exactly; patterns are not supported");
  }
  CommandEntry parsed;
  if (!absl::StrContains(entry, '/')) {
    if (entry == "." || entry == "..") return Inert("not a binary name");
    parsed.value = std::string(entry);
    return parsed;
  }
  if (entry.front() != '/') {
    return Inert("a relative path; write the binary's absolute path or its bare name");
  }
  absl::StatusOr<std::string> cleaned = CleanAbsoluteEntry(entry);
  if (!cleaned.ok()) return cleaned.status();
  if (*cleaned == "/") return Inert("'/' is not a binary");
  parsed.is_path = true;
  parsed.value = *std::move(cleaned);
  return parsed;
}

absl::StatusOr<std::string> ParseToolEntry(absl::string_view entry) {
  if (entry.empty()) return Inert("empty entry");
  if (entry.front() == '@') {
    return Inert("a list (@name) can be used only in network and filesystem lists; name each "
                 "tool on its own");
  }
  if (HasWhitespaceOrNul(entry)) {
    return Inert("contains whitespace; tools match by exact name");
  }
  return std::string(entry);
}

std::string GlobToRegex(absl::string_view glob) {
  std::string regex;
  size_t i = 0;
  while (i < glob.size()) {
    const char c = glob[i];
    if (c == '*') {
      if (i + 1 < glob.size() && glob[i + 1] == '*') {
        // "**/" also matches no directory at all: /a/**/b matches /a/b.
        if (i + 2 < glob.size() && glob[i + 2] == '/') {
          regex += "(?:.*/)?";
          i += 3;
        } else {
          regex += ".*";
          i += 2;
        }
        continue;
      }
      regex += "[^/]*";
    } else if (c == '?') {
      regex += "[^/]";
    } else if (c == '[') {
      size_t j = i + 1;
      std::string cls = "[";
      if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) {
        cls += "^/";  // a negated class still stays within one component
        ++j;
      }
      if (j < glob.size() && glob[j] == ']') {
        cls += "\\]";
        ++j;
      }
      while (j < glob.size() && glob[j] != ']') {
        if (glob[j] == '\\' || glob[j] == '[') cls += '\\';
        cls += glob[j];
        ++j;
      }
      regex += cls + "]";
      i = j + 1;
      continue;
    } else {
      regex += RE2::QuoteMeta(re2::StringPiece(&glob[i], 1));
    }
    ++i;
  }
  // A matched path covers everything under it, as a prefix entry does.
  return absl::StrCat("(?s)", regex, "(?:/.*)?");
}

}  // namespace leash::engine
