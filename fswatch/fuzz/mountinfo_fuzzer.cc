// Fuzz target: ParseMountInfo on arbitrary text (mount points are chosen by whoever mounts).
#include <cstddef>
#include <cstdint>

#include "fswatch/mountinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)leash::fswatch::ParseMountInfo(text);
  (void)leash::fswatch::UnescapeMountPath(text);
  return 0;
}
