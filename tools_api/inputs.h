// A tool call's inputs: parsing them (JSON text or a serialized google.protobuf.Value) with a
// nesting limit, and inspecting every key and string value of them, recursively, with a JSON
// path per finding and the inputs re-rendered with every secret and personal datum masked.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/struct.pb.h"
#include "engine/detectors.h"

namespace leash::tools {

// Deepest nesting of arrays and objects inspected: 32. Real tool arguments nest a few levels;
// anything deeper is refused with a reason (not inspected, never crashed on). The number is
// protobuf's: its JSON parser re-reads what it built under the default budget of 100 nested
// messages, and one JSON object level is 3 of them (Value > Struct > map entry), so 33 levels
// of objects is the most JSON text can carry into a google.protobuf.Value at all. Both input
// forms are measured without recursion before anything recursive touches them.
inline constexpr int kMaxInputDepth = 32;

// The longest masked rendering of the inputs kept for the decision log; longer ones are cut
// on a character boundary and marked.
inline constexpr size_t kMaxMaskedInputsBytes = 64 * 1024;

// Parses JSON text. InvalidArgument when it nests deeper than kMaxInputDepth (said in those
// words) or is not JSON (with the parser's words).
absl::StatusOr<google::protobuf::Value> ParseInputsJson(absl::string_view json);
// The same, allocated on `arena`, which owns the result: the Value of a 1 MiB call is some
// 10^5 messages, and an arena allocates them in blocks and frees them at once.
absl::StatusOr<google::protobuf::Value*> ParseInputsJson(absl::string_view json,
                                                         google::protobuf::Arena* arena);

// How deeply the arrays and objects of JSON text nest (brackets outside strings), counted in
// one pass without recursion and stopping once past kMaxInputDepth. Says nothing about
// whether the text is valid JSON.
int JsonTextDepth(absl::string_view json);

// Parses a serialized google.protobuf.Value (CheckToolRequest.inputs as it came off the
// wire). InvalidArgument when it nests deeper than kMaxInputDepth or is not a valid Value;
// the message says which.
absl::StatusOr<google::protobuf::Value> ParseInputsValue(absl::string_view bytes);
absl::StatusOr<google::protobuf::Value*> ParseInputsValue(absl::string_view bytes,
                                                          google::protobuf::Arena* arena);

// How deeply the arrays and objects of a serialized Value nest, found without recursion and
// without parsing more than kMaxInputDepth + 1 levels. InvalidArgument when the bytes are not
// a Value's wire format.
absl::StatusOr<int> SerializedValueDepth(absl::string_view bytes);

struct InputsFinding {
  Category category = Category::kSecrets;
  int detector = -1;
  // "$", "$.env.TOKEN", "$.argv[2]", "$[\"odd key\"]". A key that holds a secret appears
  // masked; a very long key is cut.
  std::string json_path;
  // Secrets and personal data: MaskSecret of the match. Commands: the matched phrase as
  // written, with any secret inside it masked.
  std::string shown;
  // Whether the match was in an object key rather than a value.
  bool in_key = false;
};

struct InputsReport {
  std::vector<InputsFinding> findings;  // in document order (object keys sorted)
  // The inputs as compact JSON with every secret and personal datum masked (object keys
  // sorted), at most kMaxMaskedInputsBytes plus a truncation mark.
  std::string masked_json;
};

// Inspects every object key and string value of `inputs`, recursively. An array of two or
// more strings (an argv) is also inspected as the command line it spells, for commands split
// across its elements (["rm", "-rf", "/"]). InvalidArgument when `inputs` nests deeper than
// kMaxInputDepth (the message gives the path where it did).
absl::StatusOr<InputsReport> InspectInputs(const Inspector& inspector,
                                           const google::protobuf::Value& inputs);

}  // namespace leash::tools
