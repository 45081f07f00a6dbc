// Edits of leash.yaml made in its text (config_yaml.h): the node to change is found with
// yaml-cpp, which reports where each node starts, and only that span of the text is rewritten.
// The caller reads the result back and compares it with the Config it meant to write, so an
// edit that went wrong here is caught there, and the whole Config is written instead.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/config_yaml.h"
#include "yaml-cpp/yaml.h"

namespace leash::engine {
namespace {

absl::Status NotThisShape(absl::string_view section, absl::string_view key,
                          absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(section, ".", key, ": ", why));
}

// `section`.`key` of the document, or the reason it cannot be edited in place.
absl::StatusOr<YAML::Node> FindValue(absl::string_view yaml, absl::string_view section,
                                     absl::string_view key) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return NotThisShape(section, key, absl::StrCat("the text does not parse: ", e.what()));
  }
  if (documents.size() != 1 || !documents[0].IsMap()) {
    return NotThisShape(section, key, "the text is not one YAML mapping");
  }
  const YAML::Node& root = documents[0];
  const YAML::Node parent = root[std::string(section)];
  if (!parent || !parent.IsMap()) return NotThisShape(section, key, "no such section");
  const YAML::Node value = parent[std::string(key)];
  if (!value) return NotThisShape(section, key, "no such key");
  if (value.Mark().pos < 0 || static_cast<size_t>(value.Mark().pos) >= yaml.size()) {
    return NotThisShape(section, key, "its place in the text is not known");
  }
  return value;
}

// A YAML double-quoted scalar holding `text` exactly.
std::string DoubleQuoted(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// The end of a quoted scalar that starts at `at` (its opening quote): the offset after the
// closing quote, or npos.
size_t EndOfQuoted(absl::string_view text, size_t at) {
  const char quote = text[at];
  for (size_t i = at + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;
      continue;
    }
    if (text[i] != quote) continue;
    if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
      ++i;  // '' is a quote inside a single-quoted scalar
      continue;
    }
    return i + 1;
  }
  return absl::string_view::npos;
}

// The offset of the ']' closing the flow sequence opened at `open`, or npos.
size_t ClosingBracket(absl::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      const size_t end = EndOfQuoted(text, i);
      if (end == absl::string_view::npos) return end;
      i = end - 1;
    } else if (c == '#' && i > 0 && absl::ascii_isspace(static_cast<unsigned char>(text[i - 1]))) {
      const size_t eol = text.find('\n', i);
      if (eol == absl::string_view::npos) return eol;
      i = eol;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return c == ']' ? i : absl::string_view::npos;
    }
  }
  return absl::string_view::npos;
}

// The end of the scalar item that starts at `at` inside a flow list: after its closing quote,
// or for a plain scalar at the first , ] } line break or comment, trailing spaces aside.
size_t EndOfFlowItem(absl::string_view text, size_t at) {
  if (text[at] == '"' || text[at] == '\'') return EndOfQuoted(text, at);
  size_t end = at;
  while (end < text.size()) {
    const char c = text[end];
    if (c == '\n' || c == ',' || c == ']' || c == '}') break;
    if (c == '#' && end > at && absl::ascii_isspace(static_cast<unsigned char>(text[end - 1]))) {
      break;
    }
    ++end;
  }
  while (end > at && absl::ascii_isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return end;
}

// The same for an item of a block list, where a plain scalar runs to a comment or the line's end.
size_t EndOfBlockItem(absl::string_view text, size_t at) {
  if (text[at] == '"' || text[at] == '\'') return EndOfQuoted(text, at);
  size_t end = at;
  while (end < text.size() && text[end] != '\n') {
    if (text[end] == '#' && end > at &&
        absl::ascii_isspace(static_cast<unsigned char>(text[end - 1]))) {
      break;
    }
    ++end;
  }
  while (end > at && absl::ascii_isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return end;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// The offset after the line break ending the line that holds `at` (or the text's end).
size_t AfterLine(absl::string_view text, size_t at) {
  const size_t eol = text.find('\n', at);
  return eol == absl::string_view::npos ? text.size() : eol + 1;
}

// The offset where the line holding `at` starts.
size_t LineStart(absl::string_view text, size_t at) {
  const size_t nl = at == 0 ? absl::string_view::npos : text.rfind('\n', at - 1);
  return nl == absl::string_view::npos ? 0 : nl + 1;
}

// Whether only blanks, and a comment, follow `at` on its line.
bool RestOfLineIsBlankOrComment(absl::string_view text, size_t at) {
  size_t i = at;
  while (i < text.size() && IsBlank(text[i])) ++i;
  return i == text.size() || text[i] == '\n' || text[i] == '#';
}

// Removes the flow-list item spanning [start, end) from `out`, with the comma that separates it
// from its neighbour: the one after it, or for the last item the one after the item before it
// (which starts at `previous`, npos for none). An item alone on its line takes the line with
// it, its comment too (a comment about an entry that is gone would now describe nothing).
void RemoveFlowItem(std::string& out, size_t start, size_t end, size_t previous) {
  size_t after = end;
  while (after < out.size() && IsBlank(out[after])) ++after;
  const bool comma_after = after < out.size() && out[after] == ',';
  const size_t line_from = LineStart(out, start);
  const bool starts_line =
      std::all_of(out.begin() + line_from, out.begin() + start, [](char c) { return IsBlank(c); });
  if (comma_after) {
    size_t through = after + 1;
    if (starts_line && RestOfLineIsBlankOrComment(out, through)) {
      out.erase(line_from, AfterLine(out, through) - line_from);
      return;
    }
    while (through < out.size() && IsBlank(out[through])) ++through;
    out.erase(start, through - start);
    return;
  }
  // The last item: the comma that ends the item before it goes too.
  size_t comma = absl::string_view::npos;
  if (previous != absl::string_view::npos) {
    size_t i = EndOfFlowItem(out, previous);
    while (i != absl::string_view::npos && i < start && IsBlank(out[i])) ++i;
    if (i != absl::string_view::npos && i < start && out[i] == ',') comma = i;
  }
  if (comma == absl::string_view::npos) {
    out.erase(start, end - start);  // the only item
  } else if (starts_line && RestOfLineIsBlankOrComment(out, end)) {
    out.erase(line_from, AfterLine(out, end) - line_from);
    out.erase(comma, 1);
  } else {
    out.erase(comma, end - comma);
  }
}

}  // namespace

absl::StatusOr<std::string> AppendToYamlList(absl::string_view yaml, absl::string_view section,
                                             absl::string_view key, absl::string_view item) {
  absl::StatusOr<YAML::Node> list = FindValue(yaml, section, key);
  if (!list.ok()) return list.status();
  if (!list->IsSequence()) return NotThisShape(section, key, "not a list");
  const std::string quoted = DoubleQuoted(item);
  const size_t start = static_cast<size_t>(list->Mark().pos);
  std::string out(yaml);

  if (list->Style() == YAML::EmitterStyle::Flow) {
    if (yaml[start] != '[') return NotThisShape(section, key, "a flow list that does not start with [");
    const size_t close = ClosingBracket(yaml, start);
    if (close == absl::string_view::npos) return NotThisShape(section, key, "its ] was not found");
    // The last character of the list's content before the ], spaces and line breaks aside.
    size_t last = close;
    while (last > start + 1 && absl::ascii_isspace(static_cast<unsigned char>(yaml[last - 1]))) {
      --last;
    }
    if (last == start + 1) return out.replace(start + 1, close - start - 1, quoted);
    const std::string insert = yaml[last - 1] == ',' ? absl::StrCat(" ", quoted)
                                                     : absl::StrCat(", ", quoted);
    return out.insert(last, insert);
  }

  // A block list: a new "- item" line after the last item's line, with the same indentation.
  if (list->size() == 0) return NotThisShape(section, key, "an empty block list");
  const YAML::Node last = (*list)[list->size() - 1];
  if (!last.IsScalar()) return NotThisShape(section, key, "its last item is not a scalar");
  const size_t item_at = static_cast<size_t>(last.Mark().pos);
  const size_t line_start = yaml.rfind('\n', item_at == 0 ? 0 : item_at - 1);
  const size_t from = line_start == absl::string_view::npos ? 0 : line_start + 1;
  const absl::string_view prefix = yaml.substr(from, item_at - from);
  if (absl::StripLeadingAsciiWhitespace(prefix).substr(0, 1) != "-" ||
      !absl::StripAsciiWhitespace(absl::StripLeadingAsciiWhitespace(prefix).substr(1)).empty()) {
    return NotThisShape(section, key, "its last item does not start its own '- ' line");
  }
  size_t line_end = yaml.find('\n', item_at);
  if (line_end == absl::string_view::npos) line_end = yaml.size();
  return out.insert(line_end, absl::StrCat("\n", prefix, quoted));
}

absl::StatusOr<std::string> SetYamlScalar(absl::string_view yaml, absl::string_view section,
                                          absl::string_view key, absl::string_view value) {
  absl::StatusOr<YAML::Node> scalar = FindValue(yaml, section, key);
  if (!scalar.ok()) return scalar.status();
  if (!scalar->IsScalar()) return NotThisShape(section, key, "not a scalar");
  const size_t start = static_cast<size_t>(scalar->Mark().pos);
  size_t end;
  if (yaml[start] == '"' || yaml[start] == '\'') {
    end = EndOfQuoted(yaml, start);
    if (end == absl::string_view::npos) return NotThisShape(section, key, "unterminated quote");
  } else {
    // A plain scalar ends at the line's end or a comment; in a flow mapping also at , } ].
    end = start;
    while (end < yaml.size()) {
      const char c = yaml[end];
      if (c == '\n' || c == ',' || c == '}' || c == ']') break;
      if (c == '#' && end > start && absl::ascii_isspace(static_cast<unsigned char>(yaml[end - 1]))) {
        break;
      }
      ++end;
    }
    while (end > start && absl::ascii_isspace(static_cast<unsigned char>(yaml[end - 1]))) --end;
  }
  return std::string(yaml).replace(start, end - start, std::string(value));
}

absl::StatusOr<std::string> RemoveFromYamlList(absl::string_view yaml, absl::string_view section,
                                               absl::string_view key, absl::string_view item) {
  absl::StatusOr<YAML::Node> list = FindValue(yaml, section, key);
  if (!list.ok()) return list.status();
  if (!list->IsSequence()) return NotThisShape(section, key, "not a list");
  // Every item equal to `item`, last first, so that each removal leaves the earlier offsets be.
  std::vector<size_t> found;
  for (size_t i = 0; i < list->size(); ++i) {
    const YAML::Node node = (*list)[i];
    if (!node.IsScalar()) return NotThisShape(section, key, "an item is not a scalar");
    if (node.Scalar() != item) continue;
    if (node.Mark().pos < 0 || static_cast<size_t>(node.Mark().pos) >= yaml.size()) {
      return NotThisShape(section, key, "an item's place in the text is not known");
    }
    found.push_back(i);
  }
  if (found.empty()) return NotThisShape(section, key, "the item is not in the list");
  std::string out(yaml);
  const bool flow = list->Style() == YAML::EmitterStyle::Flow;
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    const size_t start = static_cast<size_t>((*list)[*it].Mark().pos);
    if (flow) {
      const size_t end = EndOfFlowItem(out, start);
      if (end == absl::string_view::npos) return NotThisShape(section, key, "unterminated quote");
      const size_t previous =
          *it == 0 ? absl::string_view::npos : static_cast<size_t>((*list)[*it - 1].Mark().pos);
      RemoveFlowItem(out, start, end, previous);
      continue;
    }
    // A block item is its own "- item" line; the list's last remaining item becomes [] so the
    // key still holds an (empty) list rather than nothing.
    const size_t from = LineStart(out, start);
    const absl::string_view prefix = absl::string_view(out).substr(from, start - from);
    const absl::string_view dash = absl::StripLeadingAsciiWhitespace(prefix);
    if (dash.substr(0, 1) != "-" || !absl::StripAsciiWhitespace(dash.substr(1)).empty()) {
      return NotThisShape(section, key, "an item does not start its own '- ' line");
    }
    const size_t end = EndOfBlockItem(out, start);
    if (end == absl::string_view::npos || !RestOfLineIsBlankOrComment(out, end)) {
      return NotThisShape(section, key, "an item shares its line");
    }
    if (list->size() == found.size() && it + 1 == found.rend()) {
      const size_t dash_at = from + (prefix.size() - dash.size());
      const bool line_break = out.find('\n', end) != std::string::npos;
      out.replace(dash_at, AfterLine(out, end) - dash_at, line_break ? "[]\n" : "[]");
    } else {
      out.erase(from, AfterLine(out, end) - from);
    }
  }
  return out;
}

}  // namespace leash::engine
