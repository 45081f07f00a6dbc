// Fuzz target: the Uid/Gid parser of /proc/<pid>/status on arbitrary bytes.
#include <cstddef>
#include <cstdint>

#include "fswatch/proc_status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  leash::fswatch::Creds creds;
  (void)leash::fswatch::ParseProcStatusCreds(reinterpret_cast<const char*>(data), size, creds);
  return 0;
}
