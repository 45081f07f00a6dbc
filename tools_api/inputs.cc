#include "tools_api/inputs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/json_line.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/wire_format_lite.h"
#include "engine/mask.h"

namespace leash::tools {
namespace {

using base::AppendJsonString;

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;
using google::protobuf::internal::WireFormatLite;
using Entry = google::protobuf::MapPair<std::string, Value>;

// Longest key segment written into a JSON path; longer keys are cut and marked.
constexpr size_t kMaxPathKeyBytes = 64;
// Longest command phrase shown in a finding.
constexpr size_t kMaxShownBytes = 200;
// Longest argv (array of strings) also inspected as one command line.
constexpr size_t kMaxJoinedArgvBytes = 64 * 1024;
// protobuf's recursion budget for parsing a Value: one JSON level is up to three nested
// messages (Value > Struct > map entry > Value), and the walk refuses past kMaxInputDepth.
constexpr int kValueRecursionLimit = 3 * (kMaxInputDepth + 1) + 3;

void AppendJsonNumber(double d, std::string* out) {
  if (std::isnan(d) || std::isinf(d)) {
    // JSON has no NaN or infinity; protobuf's JSON mapping writes them as strings.
    AppendJsonString(std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity"), out);
  } else if (d == std::floor(d) && std::fabs(d) < 1e15) {
    absl::StrAppendFormat(out, "%.0f", d);
  } else {
    absl::StrAppendFormat(out, "%.17g", d);
  }
}

bool IsIdentifier(absl::string_view key) {
  if (key.empty() || !(absl::ascii_isalpha(key[0]) || key[0] == '_')) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

absl::InlinedVector<const Entry*, 16> SortedEntries(const Struct& s);

// Which texts of the inputs are inspected, and how each is reached.
enum class Role { kKey, kValue, kArgv };

struct PathNode {
  int parent = -1;
  const std::string* key = nullptr;  // null: an array index
  int index = 0;
};

struct Text {
  absl::string_view text;
  int node = 0;
  Role role = Role::kValue;
  // The key or string inside the inputs this text is (null for an argv line): masked
  // renderings are keyed by it.
  const std::string* owner = nullptr;
  // The key a string value is the value of, when Inspector::MayBeSecretKey holds for it (a
  // view taken while the key is in cache).
  absl::string_view member_key;
  bool has_member_key = false;
  int argv = -1;                            // index into argv element bounds, for kArgv
};

class Walker {
 public:
  absl::Status Walk(const Value& value, int node, int depth, const std::string* member_key) {
    switch (value.kind_case()) {
      case Value::kStringValue:
        texts_.push_back(Text{value.string_value(), node, Role::kValue, &value.string_value(),
                              member_key != nullptr ? absl::string_view(*member_key)
                                                    : absl::string_view(),
                              member_key != nullptr});
        return absl::OkStatus();
      case Value::kStructValue: {
        if (depth >= kMaxInputDepth) return TooDeep(node);
        for (const Entry* entry : SortedEntries(value.struct_value())) {
          const int child = AddNode(PathNode{node, &entry->first, 0});
          texts_.push_back(Text{entry->first, child, Role::kKey, &entry->first, absl::string_view(), false});
          // Whether the key could name a secret is read now, while the key is in cache.
          const std::string* key = Inspector::MayBeSecretKey(entry->first) ? &entry->first : nullptr;
          if (absl::Status s = Walk(entry->second, child, depth + 1, key); !s.ok()) return s;
        }
        return absl::OkStatus();
      }
      case Value::kListValue: {
        if (depth >= kMaxInputDepth) return TooDeep(node);
        const ListValue& list = value.list_value();
        bool argv = list.values_size() >= 2;
        size_t argv_bytes = 0;
        for (int i = 0; i < list.values_size(); ++i) {
          const Value& element = list.values(i);
          argv = argv && element.kind_case() == Value::kStringValue;
          if (argv) argv_bytes += element.string_value().size() + 1;
          if (element.kind_case() != Value::kStringValue &&
              element.kind_case() != Value::kStructValue &&
              element.kind_case() != Value::kListValue) {
            continue;  // numbers, booleans and nulls hold no text
          }
          const int child = AddNode(PathNode{node, nullptr, i});
          if (absl::Status s = Walk(element, child, depth + 1, nullptr); !s.ok()) return s;
        }
        if (argv && argv_bytes <= kMaxJoinedArgvBytes) AddArgv(list, node);
        return absl::OkStatus();
      }
      default:
        return absl::OkStatus();
    }
  }

  // The JSON path of `node`, keys masked where `masked_keys` has them.
  std::string Path(int node, const absl::flat_hash_map<int, std::string>& masked_keys) const {
    std::vector<int> chain;
    for (int n = node; n > 0; n = nodes_[n].parent) chain.push_back(n);
    std::string path = "$";
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const PathNode& p = nodes_[*it];
      if (p.key == nullptr) {
        absl::StrAppend(&path, "[", p.index, "]");
        continue;
      }
      absl::string_view key = *p.key;
      if (auto masked = masked_keys.find(*it); masked != masked_keys.end()) key = masked->second;
      std::string cut;
      if (key.size() > kMaxPathKeyBytes) {
        cut = absl::StrCat(Utf8Prefix(key, kMaxPathKeyBytes), "...");
        key = cut;
      }
      if (IsIdentifier(key)) {
        absl::StrAppend(&path, ".", key);
      } else {
        path.push_back('[');
        AppendJsonString(key, &path);
        path.push_back(']');
      }
    }
    return path;
  }

  const std::vector<Text>& texts() const { return texts_; }
  const std::vector<size_t>& argv_bounds(int argv) const { return argv_bounds_[argv]; }
  Walker() { nodes_.push_back(PathNode{}); }  // node 0: the root, "$"

 private:
  int AddNode(PathNode node) {
    nodes_.push_back(node);
    return static_cast<int>(nodes_.size()) - 1;
  }

  void AddArgv(const ListValue& list, int node) {
    std::string& line = argv_lines_.emplace_back();
    std::vector<size_t>& bounds = argv_bounds_.emplace_back();
    for (const Value& element : list.values()) {
      if (!line.empty()) line.push_back(' ');
      bounds.push_back(line.size());
      line += element.string_value();
    }
    bounds.push_back(line.size());
    texts_.push_back(Text{line, node, Role::kArgv, nullptr, absl::string_view(), false,
                          static_cast<int>(argv_bounds_.size()) - 1});
  }

  absl::Status TooDeep(int node) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs nest deeper than ", kMaxInputDepth, " levels of arrays and objects (at ",
        Path(node, {}), "); Leash refuses what it will not inspect: flatten the tool's arguments"));
  }

  std::vector<PathNode> nodes_;
  std::vector<Text> texts_;
  std::deque<std::string> argv_lines_;  // stable addresses: texts_ point into them
  std::vector<std::vector<size_t>> argv_bounds_;
};

absl::InlinedVector<const Entry*, 16> SortedEntries(const Struct& s) {
  absl::InlinedVector<const Entry*, 16> entries;
  entries.reserve(s.fields().size());
  for (const auto& entry : s.fields()) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  return entries;
}

// Renders `value` as compact JSON, strings replaced per `masked` (keyed by the address of the
// key or string in `value`), stopping once `out` passes `limit`.
void Render(const Value& value, const absl::flat_hash_map<const std::string*, std::string>& masked,
            size_t limit, std::string* out) {
  if (out->size() > limit) return;
  auto text = [&](const std::string& s) {
    auto it = masked.find(&s);
    AppendJsonString(it == masked.end() ? absl::string_view(s) : absl::string_view(it->second),
                     out);
  };
  switch (value.kind_case()) {
    case Value::kStringValue:
      text(value.string_value());
      return;
    case Value::kNumberValue:
      AppendJsonNumber(value.number_value(), out);
      return;
    case Value::kBoolValue:
      out->append(value.bool_value() ? "true" : "false");
      return;
    case Value::kStructValue: {
      out->push_back('{');
      bool first = true;
      for (const Entry* entry : SortedEntries(value.struct_value())) {
        if (out->size() > limit) return;
        if (!first) out->push_back(',');
        first = false;
        text(entry->first);
        out->push_back(':');
        Render(entry->second, masked, limit, out);
      }
      out->push_back('}');
      return;
    }
    case Value::kListValue: {
      out->push_back('[');
      bool first = true;
      for (const Value& element : value.list_value().values()) {
        if (out->size() > limit) return;
        if (!first) out->push_back(',');
        first = false;
        Render(element, masked, limit, out);
      }
      out->push_back(']');
      return;
    }
    default:
      out->append("null");
  }
}

}  // namespace

int JsonTextDepth(absl::string_view json) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (depth > kMaxInputDepth) return depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

absl::Status TooDeepInputs() {
  return absl::InvalidArgumentError(absl::StrCat(
      "inputs nest deeper than ", kMaxInputDepth,
      " levels of arrays and objects; Leash refuses what it will not inspect: flatten the "
      "tool's arguments"));
}

absl::Status ParseJsonInto(absl::string_view json, Value* value) {
  if (JsonTextDepth(json) > kMaxInputDepth) return TooDeepInputs();
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), value);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs_json is not valid JSON: ", std::string(status.message())));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> ParseInputsJson(absl::string_view json) {
  Value value;
  if (absl::Status s = ParseJsonInto(json, &value); !s.ok()) return s;
  return value;
}

absl::StatusOr<Value*> ParseInputsJson(absl::string_view json, google::protobuf::Arena* arena) {
  Value* value = google::protobuf::Arena::CreateMessage<Value>(arena);
  if (absl::Status s = ParseJsonInto(json, value); !s.ok()) return s;
  return value;
}

absl::StatusOr<int> SerializedValueDepth(absl::string_view bytes) {
  enum Kind { kValue, kStruct, kEntry, kList };
  struct Frame {
    Kind kind;
    google::protobuf::io::CodedInputStream::Limit limit;
  };
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  std::vector<Frame> stack;
  int containers = 0, deepest = 0;
  auto malformed = [] {
    return absl::InvalidArgumentError("inputs are not a valid google.protobuf.Value");
  };
  while (true) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) {
      // 0 is the end of the bytes, or a bad varint, or a literal tag 0 (invalid).
      if (stack.empty()) {
        if (!input.ConsumedEntireMessage()) return malformed();
        return deepest;
      }
      if (input.BytesUntilLimit() != 0) return malformed();
      const Frame frame = stack.back();
      stack.pop_back();
      input.PopLimit(frame.limit);
      if (frame.kind == kStruct || frame.kind == kList) --containers;
      continue;
    }
    const Kind parent = stack.empty() ? kValue : stack.back().kind;
    const int field = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    const bool delimited =
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    Kind child = kValue;
    bool nested = delimited;
    if (parent == kValue && field == Value::kStructValueFieldNumber) {
      child = kStruct;
    } else if (parent == kValue && field == Value::kListValueFieldNumber) {
      child = kList;
    } else if (parent == kStruct && field == Struct::kFieldsFieldNumber) {
      child = kEntry;
    } else if ((parent == kEntry && field == 2) ||
               (parent == kList && field == ListValue::kValuesFieldNumber)) {
      child = kValue;
    } else {
      nested = false;
    }
    if (!nested) {
      if (!WireFormatLite::SkipField(&input, tag)) return malformed();
      continue;
    }
    uint32_t length = 0;
    const int room = input.BytesUntilLimit();  // -1: no limit pushed yet
    if (!input.ReadVarint32(&length) || length > static_cast<uint32_t>(INT32_MAX) ||
        (room >= 0 && static_cast<int>(length) > room)) {
      return malformed();
    }
    stack.push_back(Frame{child, input.PushLimit(static_cast<int>(length))});
    if (child == kStruct || child == kList) {
      deepest = std::max(deepest, ++containers);
      if (containers > kMaxInputDepth) return deepest;  // deep enough to refuse; stop here
    }
  }
}

absl::Status ParseValueInto(absl::string_view bytes, Value* value) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kValueRecursionLimit);
  if (value->ParseFromCodedStream(&input) && input.ConsumedEntireMessage()) {
    return absl::OkStatus();
  }
  // Say why: too deep (the common, deliberate case) or simply not a Value.
  absl::StatusOr<int> depth = SerializedValueDepth(bytes);
  if (depth.ok() && *depth > kMaxInputDepth) return TooDeepInputs();
  return absl::InvalidArgumentError(
      "inputs are not a valid google.protobuf.Value (malformed protobuf or invalid UTF-8)");
}

absl::StatusOr<Value> ParseInputsValue(absl::string_view bytes) {
  Value value;
  if (absl::Status s = ParseValueInto(bytes, &value); !s.ok()) return s;
  return value;
}

absl::StatusOr<Value*> ParseInputsValue(absl::string_view bytes, google::protobuf::Arena* arena) {
  Value* value = google::protobuf::Arena::CreateMessage<Value>(arena);
  if (absl::Status s = ParseValueInto(bytes, value); !s.ok()) return s;
  return value;
}

absl::StatusOr<InputsReport> InspectInputs(const Inspector& inspector, const Value& inputs) {
  Walker walker;
  if (absl::Status s = walker.Walk(inputs, 0, 0, nullptr); !s.ok()) return s;
  const std::vector<Text>& texts = walker.texts();
  std::vector<absl::string_view> views;
  views.reserve(texts.size());
  for (const Text& t : texts) views.push_back(t.text);

  // Matches per text, with generic_secret's key-context half added for string values.
  std::vector<BatchMatch> found = inspector.InspectBatch(views);
  std::vector<std::vector<DetectorMatch>> per_text;
  std::vector<size_t> with_matches;
  absl::flat_hash_map<size_t, size_t> slot;  // text index -> per_text index
  auto matches_of = [&](size_t text) -> std::vector<DetectorMatch>& {
    auto [it, inserted] = slot.try_emplace(text, per_text.size());
    if (inserted) {
      per_text.emplace_back();
      with_matches.push_back(text);
    }
    return per_text[it->second];
  };
  for (const BatchMatch& m : found) matches_of(m.text).push_back(m.match);
  // Keys repeat ("path", "cmd", ...): each distinct key is judged once.
  absl::flat_hash_map<absl::string_view, bool> secret_key;
  for (size_t i = 0; i < texts.size(); ++i) {
    const Text& t = texts[i];
    if (t.role != Role::kValue || !t.has_member_key || !Inspector::MayBeKeyedSecret(t.text)) {
      continue;
    }
    auto [known, inserted] = secret_key.try_emplace(t.member_key, false);
    if (inserted) known->second = inspector.IsSecretKey(t.member_key);
    if (!known->second) continue;
    std::optional<DetectorMatch> keyed = inspector.InspectSecretKeyValue(t.text);
    if (!keyed) continue;
    auto it = slot.find(i);
    bool covered = false;
    if (it != slot.end()) {
      for (const DetectorMatch& m : per_text[it->second]) {
        covered = covered || (IsSensitive(inspector.info(m.detector).category) &&
                              m.begin < keyed->end && keyed->begin < m.end);
      }
    }
    if (!covered) {
      std::vector<DetectorMatch>& list = matches_of(i);
      list.push_back(*keyed);
      std::sort(list.begin(), list.end(), [](const DetectorMatch& a, const DetectorMatch& b) {
        return a.begin < b.begin;
      });
    }
  }
  std::sort(with_matches.begin(), with_matches.end());

  // Mask every secret and personal datum: keys first, since paths are written with them.
  absl::flat_hash_map<const std::string*, std::string> masked_strings;
  absl::flat_hash_map<int, std::string> masked_keys;
  std::vector<std::vector<Span>> spans_of(per_text.size());
  for (size_t i : with_matches) {
    std::vector<Span>& spans = spans_of[slot[i]];
    for (const DetectorMatch& m : per_text[slot[i]]) {
      if (IsSensitive(inspector.info(m.detector).category)) spans.emplace_back(m.begin, m.end);
    }
    if (spans.empty() || texts[i].owner == nullptr) continue;
    std::string masked = MaskSpans(texts[i].text, spans);
    if (texts[i].role == Role::kKey) masked_keys[texts[i].node] = masked;
    masked_strings[texts[i].owner] = std::move(masked);
  }

  InputsReport report;
  for (size_t i : with_matches) {
    const Text& t = texts[i];
    const std::vector<Span>& spans = spans_of[slot[i]];
    std::string path;
    for (const DetectorMatch& m : per_text[slot[i]]) {
      const Category category = inspector.info(m.detector).category;
      if (t.role == Role::kArgv) {
        // Only what the elements spell together: a match inside one element was reported
        // for that element already.
        if (category != Category::kPrivEsc) continue;
        const std::vector<size_t>& bounds = walker.argv_bounds(t.argv);
        const auto element = std::upper_bound(bounds.begin(), bounds.end(), m.begin);
        if (element != bounds.end() && m.end <= *element) continue;
      }
      if (path.empty()) path = walker.Path(t.node, masked_keys);
      InputsFinding finding;
      finding.category = category;
      finding.detector = m.detector;
      finding.json_path = path;
      finding.in_key = t.role == Role::kKey;
      if (IsSensitive(category)) {
        finding.shown = MaskSecret(t.text.substr(m.begin, m.end - m.begin));
      } else {
        // The phrase as written, any secret inside it masked.
        std::vector<Span> inside;
        for (const Span& s : spans) {
          if (s.first >= m.begin && s.second <= m.end) {
            inside.emplace_back(s.first - m.begin, s.second - m.begin);
          }
        }
        const std::string phrase = MaskSpans(t.text.substr(m.begin, m.end - m.begin), inside);
        finding.shown = std::string(Utf8Prefix(phrase, kMaxShownBytes));
        if (finding.shown.size() < phrase.size()) finding.shown += "...";
      }
      report.findings.push_back(std::move(finding));
    }
  }

  Render(inputs, masked_strings, kMaxMaskedInputsBytes, &report.masked_json);
  if (report.masked_json.size() > kMaxMaskedInputsBytes) {
    report.masked_json = absl::StrCat(Utf8Prefix(report.masked_json, kMaxMaskedInputsBytes),
                                      "...(truncated)");
  }
  return report;
}

}  // namespace leash::tools
