#include "engine/utf8.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/common.h"  // internal::IsStructurallyValidUTF8

namespace leash::engine {
namespace {

// The length a UTF-8 sequence starting with `lead` claims (0 for a byte no sequence starts with).
size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  if ((lead & 0xf8) == 0xf0) return 4;
  return 0;
}

}  // namespace

bool IsValidUtf8(absl::string_view text) {
  return google::protobuf::internal::IsStructurallyValidUTF8(text.data(),
                                                             static_cast<int>(text.size()));
}

std::string EscapeInvalidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = SequenceLength(static_cast<unsigned char>(text[i]));
    if (length > 0 && i + length <= text.size() && IsValidUtf8(text.substr(i, length))) {
      out.append(text.data() + i, length);
      i += length;
      continue;
    }
    absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(text[i]), absl::kZeroPad2));
    ++i;
  }
  return out;
}

}  // namespace leash::engine
