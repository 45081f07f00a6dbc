#include "engine/mask.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/detectors.h"

namespace leash::tools {
namespace {

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Byte offsets at which each character of `text` starts.
std::vector<size_t> CharStarts(absl::string_view text) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsContinuation(text[i])) starts.push_back(i);
  }
  return starts;
}

}  // namespace

std::string MaskSecret(absl::string_view secret) {
  const std::vector<size_t> starts = CharStarts(secret);
  const size_t n = starts.size();
  size_t prefix = 4, suffix = 4;
  if (n < 24) {
    const size_t budget = n / 3;
    suffix = std::min<size_t>(4, (budget + 1) / 2);
    prefix = budget - suffix;
  }
  const absl::string_view head = secret.substr(0, prefix < n ? starts[prefix] : secret.size());
  const absl::string_view tail =
      suffix == 0 ? absl::string_view() : secret.substr(starts[n - suffix]);
  return absl::StrCat(head, kMaskFill, tail);
}

std::string MaskSpans(absl::string_view text, const std::vector<Span>& spans) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (const Span& span : spans) {
    if (span.first < pos || span.second > text.size() || span.first >= span.second) continue;
    out.append(text.data() + pos, span.first - pos);
    out += MaskSecret(text.substr(span.first, span.second - span.first));
    pos = span.second;
  }
  out.append(text.data() + pos, text.size() - pos);
  return out;
}

absl::string_view Utf8Prefix(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && IsContinuation(text[end])) --end;
  return text.substr(0, end);
}

std::string MaskSensitive(const Inspector& inspector, absl::string_view text) {
  std::vector<Span> spans;
  for (const DetectorMatch& m : inspector.Inspect(text)) {
    if (!IsSensitive(inspector.info(m.detector).category)) continue;
    if (!spans.empty() && m.begin < spans.back().second) {
      spans.back().second = std::max(spans.back().second, m.end);  // overlapping: one span
      continue;
    }
    spans.emplace_back(m.begin, m.end);
  }
  return spans.empty() ? std::string(text) : MaskSpans(text, spans);
}

}  // namespace leash::tools
