#include "tools_api/testing/fixtures.h"

#include <functional>
#include <vector>

namespace leash::tools::testing {
namespace {

std::string Varint(size_t n) {
  std::string out;
  for (; n >= 0x80; n >>= 7) out.push_back(static_cast<char>(n | 0x80));
  out.push_back(static_cast<char>(n));
  return out;
}

// Wraps an empty Value in lists while `more(levels, size)` holds. Each level is
// Value.list_value (field 6) { ListValue.values (field 1) { inner } }; only the headers are
// kept, then written outermost first.
std::string NestedLists(const std::function<bool(int, size_t)>& more) {
  std::vector<std::string> headers;
  size_t inner = 0;
  while (more(static_cast<int>(headers.size()), inner)) {
    const std::string list = "\x0a" + Varint(inner);
    const std::string value = "\x32" + Varint(list.size() + inner);
    headers.push_back(value + list);
    inner += value.size() + list.size();
  }
  std::string bytes;
  bytes.reserve(inner);
  for (auto it = headers.rbegin(); it != headers.rend(); ++it) bytes += *it;
  return bytes;
}

}  // namespace

const ToolChecker& SharedChecker() {
  static const ToolChecker* const checker = new ToolChecker(ToolChecker::Create().value());
  return *checker;
}

engine::CompiledPolicy PolicyAllowing(std::initializer_list<const char*> tools,
                                      uint64_t max_input_bytes) {
  leash::v1::Config config;
  config.mutable_tools()->set_mode(leash::v1::MODE_WHITELIST);
  for (const char* tool : tools) config.mutable_tools()->mutable_allow()->add_entries(tool);
  config.mutable_tools()->set_max_input_bytes(max_input_bytes);
  return engine::CompiledPolicy::Compile(config);
}

std::string NestedListValueBytes(int depth) {
  return NestedLists([depth](int levels, size_t) { return levels < depth; });
}

std::string NestedListValueBytesUpTo(size_t max_bytes) {
  // A level adds at most 12 bytes of headers.
  return NestedLists([max_bytes](int, size_t size) { return size + 12 <= max_bytes; });
}

}  // namespace leash::tools::testing
